/** Headers as node:http gives them, as fetch's Headers, or a plain object in any letter case. */
export type HeadersLike =
  { get(name: string): string | null } | Record<string, string | readonly string[] | undefined>;

/** One header's value, whatever the container; several values of it are returned joined. */
export function headerValue(headers: HeadersLike, name: string): string | undefined {
  if (headers == null || typeof headers !== 'object') return undefined;
  if (typeof (headers as { get?: unknown }).get === 'function')
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const lower = name.toLowerCase();
  // node:http gives names in lower case: one lookup finds the header without walking them all.
  const direct = (headers as Record<string, string | readonly string[] | undefined>)[lower];
  if (typeof direct === 'string') return direct;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== lower || value === undefined) continue;
    return typeof value === 'string' ? value : (value as readonly string[]).join(',');
  }
  return undefined;
}
