import { indentJson } from '../src/settings-page/indent-json.ts';

// The attempt page's JSON bodies, indented for reading (issue 40): as JSON.stringify(value, null, 2)
// lays them out, but every token as it was sent; anything that is not JSON is left to be shown as is.

test('a JSON body is laid out as JSON.stringify(value, null, 2) would', () => {
  const sent =
    ' {"object":"event","id":"evt_1","data":{"tags":[],"notes":{ },"legs":[{"a":1},{"b":[true,false,null]}]},"n":-2.5}\n';
  expect(indentJson(sent)).toBe(JSON.stringify(JSON.parse(sent), null, 2));
});

test('every token stays as sent: digits, escapes, repeated keys, markup inside strings', () => {
  const sent = '{"big":12345678901234567890123,"one":1.0,"e":"caf\\u00e9 \\/ \\"q\\" {x:[1,2]}","k":1,"k":2}';
  expect(indentJson(sent)).toBe(
    [
      '{',
      '  "big": 12345678901234567890123,',
      '  "one": 1.0,',
      '  "e": "caf\\u00e9 \\/ \\"q\\" {x:[1,2]}",',
      '  "k": 1,',
      '  "k": 2',
      '}',
    ].join('\n'),
  );
});

test('what is not JSON is not touched: null, so the page shows it exactly', () => {
  for (const body of ['', 'ok', '<html><body>503</body></html>', '{"error":{"code":"maint', '{"a":1}x']) {
    expect([body, indentJson(body)]).toEqual([body, null]);
  }
});

test('a scalar is its own layout', () => {
  for (const body of ['42', '"accepted"', 'true', 'null']) expect(indentJson(body)).toBe(body);
});
