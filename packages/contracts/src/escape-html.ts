const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Text made safe to put in HTML, between tags or in a quoted attribute: every character that is
 * markup in either place becomes its entity. The one escape of the API reference page here and of
 * the API's settings page.
 */
export function escapeHtml(text: unknown): string {
  return String(text).replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}
