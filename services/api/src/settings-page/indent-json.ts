// A JSON body made readable for the attempt page: indented two spaces a level, as
// JSON.stringify(value, null, 2) would, but from the text itself, so every token stays exactly as
// it was sent: a number keeps all its digits, an escape stays escaped, a repeated key stays.

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const CLOSING: Record<string, string> = { '{': '}', '[': ']' };

/** The text indented when it is JSON; null when it is not (keep such a body exactly as it is). */
export function indentJson(text: string): string | null {
  try {
    JSON.parse(text);
  } catch {
    return null;
  }
  let out = '';
  let depth = 0;
  const newline = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      // A string, copied as it is: JSON.parse has vouched for its end and its escapes.
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      out += text.slice(i, end + 1);
      i = end;
    } else if (c in CLOSING) {
      let next = i + 1;
      while (WHITESPACE.has(text[next]!)) next++;
      if (text[next] === CLOSING[c]) {
        out += c + CLOSING[c];
        i = next;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') out += `,${newline()}`;
    else if (c === ':') out += ': ';
    else if (!WHITESPACE.has(c)) out += c;
  }
  return out;
}
