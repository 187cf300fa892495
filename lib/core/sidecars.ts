// Whole-file digests computed at deploy, in checksum files next to the file
// (docs/design.md, "Static files"), as Apache's mod_digest_fields reads them:
// `app.js.sha256` / `app.js.sha512` holding what sha256sum / sha512sum print,
// the hex alone, or the BSD form (`SHA256 (app.js) = hex`). Read only when
// its ctime is not older than the file's (written after the file's last
// change); anything else is no sidecar. The cache checks every one it uses
// (lib/core/file-cache.ts). No fastify.
import { constants } from 'node:fs'
import { open } from 'node:fs/promises'
import type { DigestAlgorithm } from '../../types/index'
import type { DigestResults } from './digest-stream'

/** The sidecar's extension and the digest's octets, by algorithm. */
const SIDECARS: ReadonlyMap<DigestAlgorithm, readonly [string, number]> = new Map([
  ['sha-256', ['.sha256', 32]],
  ['sha-512', ['.sha512', 64]]
])

const MAX_SIZE = 1024

// One line: the hex digest, alone or followed by blanks and the file's name
// (GNU coreutils; `*name` in binary mode), or `TAG (name) = hex` (BSD;
// OpenSSL without the spaces).
const LINE = /^(?:([0-9a-f]+)(?:[ \t][^\n]*)?|\S+ ?\([^\n]*\) ?= ([0-9a-f]+))\r?\n?$/i

/** The digest a sidecar's text holds, when it is one hex digest of `octets` octets. */
function parseSidecar (text: string, octets: number): Buffer | null {
  const m = LINE.exec(text)
  const hex = m?.[1] ?? m?.[2]
  return hex !== undefined && hex.length === octets * 2 ? Buffer.from(hex, 'hex') : null
}

/** The text of `path`: a small regular file whose ctime is not older than `since`. */
async function sidecarText (path: string, since: number): Promise<string | null> {
  // Non-blocking: a FIFO in the sidecar's place must not hold a thread.
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => null)
  if (handle === null) return null
  try {
    const stat = await handle.stat()
    if (!stat.isFile() || stat.size > MAX_SIZE || stat.ctimeMs < since) return null
    return await handle.readFile('latin1')
  } finally {
    await handle.close()
  }
}

/** The digests of the file at `path` (last changed at `ctimeMs`) that its sidecars give for every one of `algorithms`, else null. */
export async function readSidecars (
  path: string, ctimeMs: number, algorithms: readonly DigestAlgorithm[]
): Promise<DigestResults | null> {
  const out: DigestResults = new Map()
  for (const algorithm of algorithms) {
    const sidecar = SIDECARS.get(algorithm)
    if (sidecar === undefined) return null
    const text = await sidecarText(path + sidecar[0], ctimeMs)
    const digest = text === null ? null : parseSidecar(text, sidecar[1])
    if (digest === null) return null
    out.set(algorithm, digest)
  }
  return out
}
