import { urlSecrets } from '../internal/secrets.js';

/** `text` with every form of the URL's password, and any other `//user:secret@` credential, masked. */
export function redact(text: string, url: string | undefined): string {
  let out = text;
  for (const p of urlSecrets(url)) out = out.split(p).join('***');
  return out.replace(/(\/\/[^/\s:@]+:)[^@\s/]+@/g, '$1***@');
}
