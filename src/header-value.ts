// A request header's value as the gateway reads it: the first one when a header was sent twice.
export function firstHeaderValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
