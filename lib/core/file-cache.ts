// Whole-file digests for HEAD and 206 (RFC 9530 B.3; docs/design.md, "Static files"): hashed once, or
// read from sidecars, kept under the file's identity, which every write changes (the ctime never goes back).
import { constants, type ReadStream, type Stats } from 'node:fs'
import { open } from 'node:fs/promises'
import type { DigestAlgorithm } from '../../types/index'
import { ALGORITHMS } from './algorithms'
import { MultiDigester, type DigestResults } from './digest-stream'

export interface StaticFile {
  readonly path: string
  /** The stat fields that identify a version of a file. */
  readonly stat: Pick<Stats, 'dev' | 'ino' | 'size' | 'mtimeMs' | 'ctimeMs'>
}

/** Inclusive byte offsets, as in Content-Range. */
export interface ByteRange { readonly start: number, readonly end: number }

/** A file @fastify/static sends, as a response stands for it. */
export interface FileResponse extends StaticFile {
  /** @fastify/send's stream of the file (GET); null for a HEAD. */
  readonly stream: ReadStream | null
  /** The part a GET 206 sends; null for a 200 or a HEAD. */
  readonly range: ByteRange | null
  /**
   * The stream reads another version of the file than `stat` describes (or none): no whole-file digest stands for it.
   */
  readonly stale: boolean
}

const READ_SIZE = 256 * 1024
const BACKGROUND_PASSES = 2

export function sameFile (a: StaticFile['stat'], b: StaticFile['stat']): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino && a.dev === b.dev
}

/** The digests of a file or its inclusive `range`; null when unreadable or not the version `file.stat` describes. */
export async function hashFile (
  file: StaticFile, algorithms: readonly DigestAlgorithm[], range: ByteRange | null = null
): Promise<DigestResults | null> {
  const handle = await open(file.path, 'r').catch(() => null)
  if (handle === null) return null
  let position = range === null ? 0 : range.start
  const end = range === null ? file.stat.size : range.end + 1
  const hasher = new MultiDigester(algorithms)
  const buffer = Buffer.allocUnsafe(Math.min(READ_SIZE, end - position))
  try {
    while (position < end) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - position), position)
      if (bytesRead === 0) return null // shorter than its stat said
      hasher.update(buffer.subarray(0, bytesRead))
      position += bytesRead
    }
    // The descriptor's stat once read: another version, or a write while reading, changed it.
    if (sameFile(await handle.stat(), file.stat)) return hasher.digest()
  } catch {
    // Unreadable (a directory, an I/O error): no digest.
  } finally {
    await handle.close()
  }
  return null
}

/** The sidecar of `path` for `algorithm`, sha-256 or sha-512 (Apache's mod_digest_fields: `app.js.sha256`). */
export function sidecarPath (path: string, algorithm: DigestAlgorithm): string {
  return path + '.' + algorithm.replace('-', '')
}

// One line: the hex alone or followed by blanks and the name (GNU
// coreutils; `*name` in binary mode), or `TAG (name) = hex` (BSD, OpenSSL).
const SIDECAR_LINE = /^(?:([0-9a-f]+)(?:[ \t][^\n]*)?|\S+ ?\([^\n]*\) ?= ([0-9a-f]+))\r?\n?$/i

/**
 * The digests of the file at `path` (last changed at `ctimeMs`) that its sidecars give for every one of `algorithms`,
 * else null.
 */
export async function readSidecars (
  path: string, ctimeMs: number, algorithms: readonly DigestAlgorithm[]
): Promise<DigestResults | null> {
  const out: DigestResults = new Map()
  for (const algorithm of algorithms) {
    if (algorithm !== 'sha-256' && algorithm !== 'sha-512') return null
    // Non-blocking: a FIFO in the sidecar's place must not hold a thread.
    const handle = await open(sidecarPath(path, algorithm), constants.O_RDONLY | constants.O_NONBLOCK).catch(() => null)
    if (handle === null) return null
    let text = ''
    try {
      const stat = await handle.stat()
      // A regular file of at most 1 KiB, written after the file's last change.
      if (stat.isFile() && stat.size <= 1024 && stat.ctimeMs >= ctimeMs) text = await handle.readFile('latin1')
    } finally {
      await handle.close()
    }
    const m = SIDECAR_LINE.exec(text)
    const hex = m?.[1] ?? m?.[2]
    if (hex === undefined || hex.length / 2 !== ALGORITHMS.get(algorithm)?.length) return null
    out.set(algorithm, Buffer.from(hex, 'hex'))
  }
  return out
}

/** Set `key` as the most recently used entry of `map`, evicting the least recently used beyond `max`. */
function touch<V> (map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key)
  map.set(key, value)
  while (map.size > max) map.delete(map.keys().next().value as string)
}

type Pass = Promise<DigestResults | null>

/**
 * `background`: `fileHashing: 'background'`, answering without what is not known yet; `sidecars`: `fileSidecars`
 * (true: used at once, checked in the background; 'verified': used once a pass confirmed them).
 */
interface FileCacheOptions {
  readonly background: boolean
  readonly sidecars: boolean | 'verified'
  readonly wrongSidecar?: (path: string) => void
}

const noop = (): void => {}

/** The identity of one version of a file: every write changes its ctime (docs/design.md, "Static files"). */
function versionKey (file: StaticFile): string {
  const { dev, ino, size, mtimeMs, ctimeMs } = file.stat
  return `${file.path}\u0000${size}\u0000${mtimeMs}\u0000${ctimeMs}\u0000${ino}\u0000${dev}`
}

// Digests of whole files, one version per path, at most `max`, least recently used out (0 keeps
// nothing; concurrent requests still share a pass). BACKGROUND_PASSES run at once, at most `max` wait.
export class FileDigestCache {
  readonly #entries = new Map<string, { readonly key: string, readonly digests: DigestResults }>()
  /** Passes under way, by identity key, then algorithm. */
  readonly #pending = new Map<string, Map<DigestAlgorithm, Pass>>()
  /** Versions whose sidecars turned out wrong: never read again. */
  readonly #wrong = new Map<string, true>()
  /** Versions whose cached digests are their sidecars' and not checked yet, with the GETs being sent with them. */
  readonly #claims = new Map<string, { sending: number }>()
  /** Versions whose sidecars a pass confirmed ('verified': read again without a pass); kept longer than digests. */
  readonly #verified = new Map<string, true>()
  #running = 0
  readonly #queue: Array<() => void> = []

  constructor (private readonly max: number, private readonly options: FileCacheOptions) {}

  #store (file: StaticFile, key: string, digests: DigestResults): void {
    const entry = this.#entries.get(file.path)
    const kept = entry?.key === key ? entry : { key, digests: new Map<DigestAlgorithm, Buffer>() }
    for (const [a, v] of digests) kept.digests.set(a, v)
    touch(this.#entries, file.path, kept, this.max)
  }

  /** For each of `algorithms`: its cached digest, the pass under way that gives it, or undefined. */
  #lookup (file: StaticFile, key: string, algorithms: readonly DigestAlgorithm[]): Array<Buffer | Pass | undefined> {
    const entry = this.#entries.get(file.path)
    const cached = entry?.key === key ? entry.digests : undefined
    if (cached !== undefined) touch(this.#entries, file.path, entry, this.max)
    const pending = this.#pending.get(key)
    return algorithms.map((a) => cached?.get(a) ?? pending?.get(a))
  }

  // One pass over this version, shared until it ends, then kept; checks `claimed` (sidecars'). Now, or in the
  // background when a slot is free; null (not started) when too many wait already.
  #pass (
    file: StaticFile,
    key: string,
    algorithms: readonly DigestAlgorithm[],
    background: boolean,
    claimed: DigestResults | null
  ): Pass | null {
    if (background && this.#queue.length >= this.max) return null
    const hashing: Pass = !background
      ? hashFile(file, algorithms)
      : new Promise((resolve) => {
        const start = (): void => {
          this.#running++
          hashFile(file, algorithms).then(resolve, () => resolve(null)).finally(() => {
            this.#running--
            this.#queue.shift()?.()
          })
        }
        if (this.#running < BACKGROUND_PASSES) start()
        else this.#queue.push(start)
      })
    const passes = this.#pending.get(key) ?? new Map<DigestAlgorithm, Pass>()
    this.#pending.set(key, passes)
    const pass = hashing.then((result) => {
      for (const a of algorithms) passes.delete(a)
      if (passes.size === 0) this.#pending.delete(key)
      const claim = this.#claims.get(key)
      this.#claims.delete(key)
      if (result === null) {
        // Not read to the end: what the sidecars claim stays unchecked.
        if (claimed !== null) this.drop(file.path)
        return null
      }
      if (claimed !== null && algorithms.some((a) => !(claimed.get(a) as Buffer).equals(result.get(a) as Buffer))) {
        // Told once: by this warning, or by the GETs sent with the sidecar's digests, each cut off (refute).
        if (!this.#wrong.has(key) && (claim?.sending ?? 0) === 0) this.options.wrongSidecar?.(file.path)
        touch(this.#wrong, key, true, this.max)
      } else if (claimed !== null) {
        touch(this.#verified, key, true, this.max * 16)
      }
      this.#store(file, key, result)
      return result
    })
    for (const a of algorithms) passes.set(a, pass)
    return pass
  }

  // This version's digests: cached, from a pass under way, from sidecars (checked by a background pass),
  // else from a new pass. Null when the file is not that version, or (background) not known yet.
  async digests (file: StaticFile, algorithms: readonly DigestAlgorithm[]): Promise<DigestResults | null> {
    const key = versionKey(file)
    let found = this.#lookup(file, key, algorithms)
    if (found.includes(undefined) && this.options.sidecars !== false && !this.#wrong.has(key)) {
      await this.#fromSidecars(file, key, algorithms.filter((_, i) => found[i] === undefined))
      found = this.#lookup(file, key, algorithms)
    }
    if (found.includes(undefined)) {
      this.#pass(file, key, algorithms.filter((_, i) => found[i] === undefined), this.options.background, null)
      found = this.#lookup(file, key, algorithms)
    }
    const out: DigestResults = new Map()
    for (let i = 0; i < algorithms.length; i++) {
      const a = algorithms[i] as DigestAlgorithm
      let value = found[i]
      if (value instanceof Promise) value = this.options.background ? undefined : (await value)?.get(a)
      if (value === undefined) return null
      out.set(a, value)
    }
    return out
  }

  // The sidecars' digests of `missing`: kept now and checked by a background pass (true, or 'verified' once confirmed),
  // or ('verified', not confirmed yet) not kept, checked by the pass that hashes the file as without sidecars.
  async #fromSidecars (file: StaticFile, key: string, missing: readonly DigestAlgorithm[]): Promise<void> {
    const claimed = await readSidecars(file.path, file.stat.ctimeMs, missing)
    // Only when all are still missing (concurrent requests read the same sidecars).
    if (claimed === null || !this.#lookup(file, key, missing).every((v) => v === undefined)) return
    if (this.#verified.has(key)) return this.#store(file, key, claimed)
    if (this.options.sidecars === 'verified') {
      this.#pass(file, key, missing, this.options.background, claimed)
      return
    }
    // Kept only while a pass checks them (none starts when too many wait).
    if (this.#pass(file, key, missing, true, claimed) !== null) {
      this.#claims.set(key, { sending: 0 })
      this.#store(file, key, claimed)
    }
  }

  /** A GET of `file` is sent with its cached digests: the release when it ends. */
  sending (file: StaticFile): () => void {
    const claim = this.#claims.get(versionKey(file))
    if (claim === undefined) return noop
    claim.sending++
    return () => { claim.sending-- }
  }

  // The bytes of `file` a GET sent did not match the digests it was sent with: forgotten. True when those were its
  // sidecars' (unchecked, or found wrong), which are then never read again.
  refute (file: StaticFile): boolean {
    const key = versionKey(file)
    this.drop(file.path)
    if (!this.#claims.delete(key) && !this.#wrong.has(key)) return false
    touch(this.#wrong, key, true, this.max)
    return true
  }

  /** Forget the digests of `path`: the bytes sent did not match them. */
  drop (path: string): void {
    this.#entries.delete(path)
  }
}
