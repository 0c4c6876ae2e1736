/**
 * Whether the date and time at the start of an ISO 8601 text are a real calendar time:
 * `2026-02-30` or `10:61` are not. JavaScript's Date would roll them over silently (to 2 March, to
 * 11:01), so a time an operator mistyped would be taken for another one.
 */
export function isCalendarTime(text: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1).map((part) => Number(part ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return (
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59
  );
}
