// Secrets that travel inside configuration URLs (an RPC provider's API key sits in its path or
// query string) must not reach error messages, logs or Bull Board, which store errors' texts.
// Libraries put the URL they called into their errors (ethers: `info.requestUrl`), so errors
// crossing such a boundary are rewritten here.

const CENSOR = '[redacted]';

/** The forms in which `url`'s credentials may appear in a text: the whole URL, and its path, query and user info. */
export function secretPartsOfUrl(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [url];
  }
  const parts = [url, parsed.href, `${parsed.host}${parsed.pathname}${parsed.search}`];
  if (parsed.pathname.length > 1) parts.push(parsed.pathname);
  if (parsed.search.length > 1) parts.push(parsed.search.slice(1));
  if (parsed.password) parts.push(parsed.password);
  if (parsed.username) parts.push(parsed.username);
  // A key may also be echoed alone (a provider's error body): each path segment and query value long enough to be one.
  for (const segment of parsed.pathname.split('/')) if (segment.length >= 8) parts.push(segment);
  for (const value of parsed.searchParams.values()) if (value.length >= 8) parts.push(value);
  // Longest first, so that a part inside a longer one never leaves the rest behind.
  return [...new Set(parts.filter((p) => p.length >= 4))].sort((a, b) => b.length - a.length);
}

export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join(CENSOR);
  return out;
}

/** An error whose message (and so its stack) names none of `secrets`; the original is not kept as its cause. */
export function redactError(err: unknown, secrets: readonly string[]): Error {
  const message = redactText(err instanceof Error ? err.message : String(err), secrets);
  const redacted = new Error(message);
  if (err instanceof Error) redacted.name = err.name;
  return redacted;
}

/** `target` with every method's rejection (and throw) redacted. */
export function redactingProxy<T extends object>(target: T, secrets: readonly string[]): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        try {
          const out = (value as (...a: unknown[]) => unknown).apply(obj, args);
          return out instanceof Promise
            ? out.catch((err: unknown) => {
                throw redactError(err, secrets);
              })
            : out;
        } catch (err) {
          throw redactError(err, secrets);
        }
      };
    },
  });
}
