/** Password forms of a `scheme://user:password@host` URL (raw, decoded, encoded). */
export function passwordsOf(url: string | undefined): string[] {
  if (!url) return [];
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#@]*)@/.exec(url);
  const colon = m?.[1]?.indexOf(':') ?? -1;
  if (!m || colon < 0) return [];
  const raw = m[1]!.slice(colon + 1);
  if (raw.length === 0) return [];
  const forms = new Set([raw, encodeURIComponent(raw)]);
  try {
    forms.add(decodeURIComponent(raw));
  } catch {
    // not percent-encoded
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/** `text` with every form of the URL's password, and any `//user:secret@` credential, masked. */
export function redact(text: string, url: string | undefined): string {
  let out = text;
  for (const p of passwordsOf(url)) out = out.split(p).join('***');
  return out.replace(/(\/\/[^/\s:@]+:)[^@\s/]+@/g, '$1***@');
}
