/**
 * The golden 6330-byte checkpoint and its description, read from the one
 * fixture home (`packages/conformance/fixtures/`), the same way in Node and
 * in the browser: Vite's `?inline` turns the file into a base64 data URL.
 * `fixtures.node.test.ts` checks the bytes against the conformance manifest.
 */
import dataUrl from '../../conformance/fixtures/golden-6330.llmcp?inline';
import goldenJson from '../../conformance/fixtures/golden-6330.json';

const BASE64 = dataUrl.slice(dataUrl.indexOf(',') + 1);

/** @returns a fresh copy of the golden file bytes. */
export function goldenBytes(): Uint8Array {
  const text = atob(BASE64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

/** `golden-6330.json`: the golden file described as data. */
export const golden: typeof goldenJson = goldenJson;
