// What a webhook endpoint may be: an absolute http(s) URL of at most 2048 characters, https
// unless plain http is allowed (development and tests), without credentials, compared after
// WHATWG normalization (scheme and host lowercased, default port dropped, the path's
// percent-encoding and dot segments normalized; the fragment, never sent, is dropped).
export const MAX_URL_LENGTH = 2048;

export type UrlCheck = { ok: true; url: URL; normalized: string } | { ok: false; error: string };

export function checkEndpointUrl(input: unknown, opts: { allowHttp: boolean }): UrlCheck {
  if (typeof input !== 'string' || input.trim() === '') return { ok: false, error: 'endpoint is required: an absolute https URL' };
  if (input.length > MAX_URL_LENGTH) return { ok: false, error: `endpoint must be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    return { ok: false, error: 'endpoint must be an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(opts.allowHttp && url.protocol === 'http:')) {
    return { ok: false, error: opts.allowHttp ? 'endpoint must be an http or https URL' : 'endpoint must be an https URL' };
  }
  if (url.username || url.password) return { ok: false, error: 'endpoint must not carry credentials (user:password@)' };
  if (!url.hostname) return { ok: false, error: 'endpoint must name a host' };
  url.hash = '';
  const normalized = url.href;
  if (normalized.length > MAX_URL_LENGTH) return { ok: false, error: `endpoint must be at most ${MAX_URL_LENGTH} characters once normalized` };
  return { ok: true, url, normalized };
}
