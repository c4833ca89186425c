// Share links: the page's state (trace, machine, data, options) as base64url of deflated JSON in
// the URL fragment (#s=…), so the link works offline and nothing reaches a server's logs.
function toBase64url(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text) {
  const s = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

async function pipe(bytes, stream) {
  const reader = new Blob([bytes]).stream().pipeThrough(stream);
  return new Uint8Array(await new Response(reader).arrayBuffer());
}

export async function encodeState(state) {
  const json = new TextEncoder().encode(JSON.stringify(state));
  return toBase64url(await pipe(json, new CompressionStream("deflate-raw")));
}

// inflated a chunk at a time, refused past maxBytes (a small link must not inflate to gigabytes)
async function inflate(bytes, maxBytes) {
  const reader = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw")).getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) { reader.cancel(); throw new Error("shared state too large"); }
    parts.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

export async function decodeState(text, maxBytes) {
  const raw = await inflate(fromBase64url(text), maxBytes);
  const state = JSON.parse(new TextDecoder().decode(raw));
  if (typeof state !== "object" || state === null || Array.isArray(state)) throw new Error("not a playground link");
  return state;
}
