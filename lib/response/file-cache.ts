// Whole-file digests, hashed on the side and cached (RFC 9530 §3, B.3).
//
// A 206 carries the Repr-Digest of the whole file and a HEAD the one of the
// file a GET would send, yet neither response carries those bytes. So the
// file is hashed on the side, streamed once (never buffered), and the result
// cached under the file's identity: path, size, mtimeMs, ctimeMs and inode.
// A digest is kept only when the file's stat is the same before and after
// hashing and equal to the stat @fastify/send served it under: a file
// rewritten between two requests, or while it was being hashed, never gets a
// stale digest. The ctime is the one the kernel sets at every write, and no
// call can set it back (utimes(2) sets it to the current time): a rewrite
// that keeps the size, the inode and the mtime (a reproducible build copied
// with `cp -p`) still changes it. Two writes within one tick of a coarse
// file-system clock can share a ctime: what a full response streams is
// therefore checked against the digests it was sent with (files.ts). Two
// requests for the same uncached file share one hashing pass.
//
// No fastify here: which response stands for which file is lib/response/files.ts.
import type { Stats } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import type { DigestAlgorithm } from '../../types/index'
import { MultiDigester, type DigestResults } from '../digest-stream'

/** The stat fields that identify a version of a file. */
export type FileStat = Pick<Stats, 'dev' | 'ino' | 'size' | 'mtimeMs' | 'ctimeMs'>

export interface StaticFile {
  readonly path: string
  readonly stat: FileStat
}

/** Inclusive byte offsets, as in Content-Range. */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

type OpenFile = (path: string) => Promise<FileHandle>
export type HashFile = (file: StaticFile, algorithms: readonly DigestAlgorithm[], range?: ByteRange | null) => Promise<DigestResults | null>

const READ_SIZE = 256 * 1024

export function sameFile (a: FileStat, b: FileStat): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino && a.dev === b.dev
}

/** The weak ETag @fastify/send derives from a stat. */
export function sendEtag (stat: Pick<Stats, 'size' | 'mtime'>): string {
  return `W/"${stat.size.toString(16)}-${stat.mtime.getTime().toString(16)}"`
}

/** `bytes first-last/complete` (RFC 9110 §14.4), or null. */
export function parseContentRange (value: unknown): (ByteRange & { total: number }) | null {
  const m = typeof value === 'string' ? /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value) : null
  if (m === null) return null
  return { start: Number(m[1]), end: Number(m[2]), total: Number(m[3]) }
}

const openForReading: OpenFile = (path) => open(path, 'r')

async function readDigests (
  handle: FileHandle, file: StaticFile, algorithms: readonly DigestAlgorithm[], range: ByteRange | null
): Promise<DigestResults | null> {
  if (!sameFile(await handle.stat(), file.stat)) return null
  let position = range === null ? 0 : range.start
  const end = range === null ? file.stat.size : range.end + 1
  const hasher = new MultiDigester(algorithms)
  const buffer = Buffer.allocUnsafe(Math.max(1, Math.min(READ_SIZE, end - position)))
  while (position < end) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - position), position)
    if (bytesRead === 0) return null // shorter than its stat said
    hasher.update(buffer.subarray(0, bytesRead))
    position += bytesRead
  }
  // Re-stat: a write while we were reading changes the size or the mtime.
  if (!sameFile(await handle.stat(), file.stat)) return null
  return hasher.digest()
}

/**
 * Hash a file (or the inclusive `range` of it) by streaming it once through
 * a reused buffer. Returns null when the file cannot be read or when its stat,
 * taken on the open descriptor before and after reading, is not `file.stat`:
 * the bytes read are then not the version of the file the caller meant.
 */
export async function hashFile (
  file: StaticFile, algorithms: readonly DigestAlgorithm[], range: ByteRange | null = null, openFile: OpenFile = openForReading
): Promise<DigestResults | null> {
  let handle: FileHandle
  try {
    handle = await openFile(file.path)
  } catch {
    return null
  }
  const digests = await readDigests(handle, file, algorithms, range).catch(() => null)
  await handle.close()
  return digests
}

function identityKey (file: StaticFile): string {
  const { dev, ino, size, mtimeMs, ctimeMs } = file.stat
  return `${file.path}\u0000${size}\u0000${mtimeMs}\u0000${ctimeMs}\u0000${ino}\u0000${dev}`
}

interface Entry {
  readonly stat: FileStat
  readonly digests: DigestResults
}

/** Set `key` as the most recently used entry of `map`, evicting the least recently used beyond `max`. */
function touch<V> (map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key)
  map.set(key, value)
  while (map.size > max) map.delete(map.keys().next().value as string)
}

/**
 * Digests of whole files, least recently used first out. One entry per
 * path, holding the digests computed for one version of the file (a newer
 * version replaces it), so `maxEntries` bounds the memory whatever the files'
 * sizes: a path and at most one digest per algorithm each. 0 keeps nothing
 * (every request hashes; concurrent ones still share a pass).
 */
export class FileDigestCache {
  readonly #max: number
  readonly #hash: HashFile
  readonly #entries = new Map<string, Entry>()
  /** Hashing passes under way, by file version, then algorithm. */
  readonly #pending = new Map<string, Map<DigestAlgorithm, Promise<Buffer | null>>>()
  /** ETag-based lookups for HEAD without staticHeaders: alias → path. */
  readonly #aliases = new Map<string, string>()

  constructor (maxEntries: number, hash: HashFile = hashFile) {
    this.#max = maxEntries
    this.#hash = hash
  }

  get size (): number {
    return this.#entries.size
  }

  #entry (file: StaticFile): Entry | null {
    const entry = this.#entries.get(file.path)
    if (entry === undefined || !sameFile(entry.stat, file.stat)) return null
    touch(this.#entries, file.path, entry, this.#max)
    return entry
  }

  #store (file: StaticFile, digests: DigestResults): void {
    const entry = this.#entries.get(file.path)
    if (entry !== undefined && sameFile(entry.stat, file.stat)) {
      for (const [a, v] of digests) entry.digests.set(a, v)
      touch(this.#entries, file.path, entry, this.#max)
    } else {
      const { dev, ino, size, mtimeMs, ctimeMs } = file.stat
      touch(this.#entries, file.path, { stat: { dev, ino, size, mtimeMs, ctimeMs }, digests: new Map(digests) }, this.#max)
    }
  }

  /** The cached digests of this version of the file for every one of `algorithms`, else null. */
  cached (file: StaticFile, algorithms: readonly DigestAlgorithm[]): DigestResults | null {
    const entry = this.#entry(file)
    const out: DigestResults = new Map()
    for (const a of algorithms) {
      const v = entry?.digests.get(a)
      if (v === undefined) return null
      out.set(a, v)
    }
    return out
  }

  /**
   * The digests of this version of the file for `algorithms`: cached ones,
   * ones a pass under way will produce, and one new pass for the rest.
   * Null when the file is not (or no longer) that version.
   */
  async digests (file: StaticFile, algorithms: readonly DigestAlgorithm[]): Promise<DigestResults | null> {
    const entry = this.#entry(file)
    const key = identityKey(file)
    const pending = this.#pending.get(key)
    const out: DigestResults = new Map()
    const waits: Array<[DigestAlgorithm, Promise<Buffer | null>]> = []
    const missing: DigestAlgorithm[] = []
    for (const a of algorithms) {
      const v = entry?.digests.get(a)
      const p = pending?.get(a)
      if (v !== undefined) out.set(a, v)
      else if (p !== undefined) waits.push([a, p])
      else missing.push(a)
    }
    if (missing.length > 0) {
      const passes = pending ?? new Map<DigestAlgorithm, Promise<Buffer | null>>()
      this.#pending.set(key, passes)
      const pass = this.#hash(file, missing).then((result) => {
        for (const a of missing) passes.delete(a)
        if (passes.size === 0) this.#pending.delete(key)
        if (result !== null) this.#store(file, result)
        return result
      })
      for (const a of missing) {
        const one = pass.then((result) => result === null ? null : result.get(a) as Buffer)
        passes.set(a, one)
        waits.push([a, one])
      }
    }
    for (const [a, p] of waits) {
      const v = await p
      if (v === null) return null
      out.set(a, v)
    }
    return out
  }

  /** Cached digests only, or computed ones too. */
  async lookup (file: StaticFile, algorithms: readonly DigestAlgorithm[], cachedOnly: boolean): Promise<DigestResults | null> {
    return cachedOnly ? this.cached(file, algorithms) : await this.digests(file, algorithms)
  }

  /** Forget the digests of `path`: the bytes sent did not match them. */
  drop (path: string): void {
    this.#entries.delete(path)
  }

  remember (alias: string, path: string): void {
    touch(this.#aliases, alias, path, this.#max)
  }

  recall (alias: string): string | null {
    const path = this.#aliases.get(alias)
    if (path === undefined) return null
    touch(this.#aliases, alias, path, this.#max)
    return path
  }
}
