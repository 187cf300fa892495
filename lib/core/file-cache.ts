// Whole-file digests, hashed on the side and cached (RFC 9530 §3, B.3;
// docs/design.md, "Static files"): a 206 and a HEAD carry the Repr-Digest of
// bytes they do not send. A file is streamed once, never buffered, and its
// digests kept under its identity (path, size, mtime, ctime, inode) only
// when the stat of the descriptor read is that identity: the ctime changes
// at every write and no call sets it back (utimes(2) sets it to now), so a
// rewrite between or during requests never gets a stale digest. No fastify.
import type { Stats } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import type { DigestAlgorithm } from '../../types/index'
import { MultiDigester, type DigestResults } from './digest-stream'
import { readSidecars } from './sidecars'

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

const READ_SIZE = 256 * 1024

export function sameFile (a: FileStat, b: FileStat): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino && a.dev === b.dev
}

async function readDigests (
  handle: FileHandle, file: StaticFile, algorithms: readonly DigestAlgorithm[], range: ByteRange | null
): Promise<DigestResults | null> {
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
  // Stat the descriptor once read: another version, or a write while reading, changed it (ctime never goes back).
  if (!sameFile(await handle.stat(), file.stat)) return null
  return hasher.digest()
}

/** The digests of a file or its inclusive `range`; null when unreadable or not the version `file.stat` describes. */
export async function hashFile (
  file: StaticFile, algorithms: readonly DigestAlgorithm[], range: ByteRange | null = null
): Promise<DigestResults | null> {
  let handle: FileHandle
  try {
    handle = await open(file.path, 'r')
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

/** Background passes that run at once; the others wait for one to end. */
const BACKGROUND_PASSES = 2

/**
 * `background`: answer without what is not known yet, hashed in the background
 * (`fileHashing: 'background'`); `sidecars`: digests from sidecars (sidecars.ts),
 * each checked by a background pass; `wrongSidecar`: told of one that did not match.
 */
interface FileCacheOptions { readonly background?: boolean, readonly sidecars?: boolean, readonly wrongSidecar?: (path: string) => void }

interface Found {
  readonly out: DigestResults
  readonly waits: Array<[DigestAlgorithm, Promise<Buffer | null>]>
  readonly missing: DigestAlgorithm[]
}

/**
 * Digests of whole files, least recently used out, one version per path:
 * `maxEntries` bounds the memory whatever the sizes (0 keeps nothing;
 * concurrent requests still share a pass). Background passes run
 * BACKGROUND_PASSES at a time, at most `maxEntries` waiting: no pile of open files.
 */
export class FileDigestCache {
  readonly #max: number
  readonly #background: boolean
  readonly #sidecars: boolean
  readonly #wrongSidecar: (path: string) => void
  readonly #entries = new Map<string, Entry>()
  /** Hashing passes under way, by file version, then algorithm. */
  readonly #pending = new Map<string, Map<DigestAlgorithm, Promise<Buffer | null>>>()
  /** File versions whose sidecars turned out wrong: never read again. */
  readonly #wrong = new Map<string, true>()
  #running = 0
  readonly #queue: Array<() => void> = []

  constructor (maxEntries: number, options: FileCacheOptions = {}) {
    this.#max = maxEntries
    this.#background = options.background ?? false
    this.#sidecars = options.sidecars ?? false
    this.#wrongSidecar = options.wrongSidecar ?? (() => {})
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

  /** For each of `algorithms`: its cached digest, the pass under way that will give it, or neither. */
  #find (file: StaticFile, key: string, algorithms: readonly DigestAlgorithm[]): Found {
    const entry = this.#entry(file)
    const pending = this.#pending.get(key)
    const found: Found = { out: new Map(), waits: [], missing: [] }
    for (const a of algorithms) {
      const v = entry?.digests.get(a)
      const p = pending?.get(a)
      if (v !== undefined) found.out.set(a, v)
      else if (p !== undefined) found.waits.push([a, p])
      else found.missing.push(a)
    }
    return found
  }

  /** `run` now, or, in the background, when a slot is free; null when too many wait already. */
  #schedule (run: () => Promise<DigestResults | null>, background: boolean): Promise<DigestResults | null> | null {
    if (!background) return run()
    if (this.#queue.length >= this.#max) return null
    return new Promise((resolve) => {
      const start = (): void => {
        this.#running++
        run().then(resolve, () => resolve(null)).finally(() => {
          this.#running--
          this.#queue.shift()?.()
        })
      }
      if (this.#running < BACKGROUND_PASSES) start()
      else this.#queue.push(start)
    })
  }

  /** One pass over this version for `algorithms`, shared until it ends and kept; checks `claimed` (sidecars'). Null: not started. */
  #pass (
    file: StaticFile, key: string, algorithms: readonly DigestAlgorithm[], background: boolean, claimed: DigestResults | null
  ): Promise<DigestResults | null> | null {
    const hashing = this.#schedule(() => hashFile(file, algorithms), background)
    if (hashing === null) return null
    const passes = this.#pending.get(key) ?? new Map<DigestAlgorithm, Promise<Buffer | null>>()
    this.#pending.set(key, passes)
    const pass = hashing.then((result) => {
      for (const a of algorithms) passes.delete(a)
      if (passes.size === 0) this.#pending.delete(key)
      if (result === null) {
        // This version could not be read to the end: what its sidecars claim stays unchecked.
        if (claimed !== null) this.drop(file.path)
        return null
      }
      if (claimed !== null && algorithms.some((a) => !(claimed.get(a) as Buffer).equals(result.get(a) as Buffer))) {
        touch(this.#wrong, key, true, this.#max)
        this.#wrongSidecar(file.path)
      }
      this.#store(file, result)
      return result
    })
    for (const a of algorithms) passes.set(a, pass.then((result) => result === null ? null : result.get(a) as Buffer))
    return pass
  }

  /** Keep what the file's sidecars give for `algorithms`, if they give all of them and a pass can check them. */
  async #readSidecars (file: StaticFile, key: string, algorithms: readonly DigestAlgorithm[]): Promise<void> {
    if (this.#wrong.has(key)) return
    const claimed = await readSidecars(file.path, file.stat.ctimeMs, algorithms)
    // Only what is still missing once read (concurrent requests read the same sidecars).
    if (claimed === null || this.#find(file, key, algorithms).missing.length < algorithms.length) return
    if (this.#pass(file, key, algorithms, true, claimed) !== null) this.#store(file, claimed)
  }

  /**
   * This version's digests for `algorithms`: cached, from a pass under way,
   * from sidecars, else from one new pass. Null when the file is not that
   * version, or (background mode) when any is not known yet.
   */
  async digests (file: StaticFile, algorithms: readonly DigestAlgorithm[]): Promise<DigestResults | null> {
    const key = identityKey(file)
    let found = this.#find(file, key, algorithms)
    if (found.missing.length > 0) {
      if (this.#sidecars) await this.#readSidecars(file, key, found.missing)
      const { missing } = this.#find(file, key, algorithms)
      if (missing.length > 0) this.#pass(file, key, missing, this.#background, null)
      found = this.#find(file, key, algorithms)
    }
    const { out, waits } = found
    if (this.#background) return out.size === algorithms.length ? out : null
    for (const [a, p] of waits) {
      const v = await p
      if (v === null) return null
      out.set(a, v)
    }
    return out
  }

  /** Forget the digests of `path`: the bytes sent did not match them. */
  drop (path: string): void {
    this.#entries.delete(path)
  }
}
