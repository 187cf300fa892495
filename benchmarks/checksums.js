'use strict'

// Throughput of the deprecated RFC 9530 checksums: lib/core/checksums.ts (built)
// against npm libraries, when those are installed. The numbers are quoted at
// the top of lib/core/checksums.ts.
//
//   npx tsc -p tsconfig.json
//   node benchmarks/checksums.js
//
// Candidate libraries are optional and never go into package.json. Install
// them somewhere else and point CHECKSUM_BENCH_LIBS at that node_modules:
//
//   mkdir -p /tmp/cksbench && cd /tmp/cksbench && npm init -y
//   npm install --no-save @node-rs/crc32 crc-32 adler-32 hash-wasm
//   CHECKSUM_BENCH_LIBS=/tmp/cksbench/node_modules node benchmarks/checksums.js
//
// Method: 64 MiB of patterned data, fed as 1024 chunks of 64 KiB (the size
// of a typical stream chunk), each chunk's result going into the next call.
// One warm-up pass lets V8 optimise the code, then three timed passes; the
// median is printed. Every implementation must give the same value as ours,
// so the table also cross-checks correctness. Close other work first: the
// numbers are single-threaded and sensitive to a busy machine.

const path = require('node:path')
const assert = require('node:assert')

const checksums = require(path.join(__dirname, '..', 'dist', 'checksums.js'))

const TOTAL = 64 * 1024 * 1024
const CHUNK = 64 * 1024
const RUNS = 3

const data = Buffer.allocUnsafe(TOTAL)
for (let i = 0; i < TOTAL; i++) data[i] = (i * 31) % 251
const chunks = []
for (let off = 0; off < TOTAL; off += CHUNK) chunks.push(data.subarray(off, off + CHUNK))

const libDir = process.env.CHECKSUM_BENCH_LIBS

function load (name) {
  try {
    return require(require.resolve(name, libDir ? { paths: [libDir] } : undefined))
  } catch {
    return null
  }
}

// Each candidate: { algorithm, name, pkg, run () → final value as uint32 }.
const candidates = []

function add (algorithm, name, pkg, run) {
  candidates.push({ algorithm, name, pkg, run })
}

add('crc32c', 'own slice-by-8', null, () => {
  let crc = 0
  for (const c of chunks) crc = checksums.crc32c(c, crc)
  return crc
})
add('adler', 'own', null, () => {
  let a = 1
  for (const c of chunks) a = checksums.adler32(c, a)
  return a
})
add('unixcksum', 'own slice-by-8', null, () => {
  let r = 0
  for (const c of chunks) r = checksums.cksumUpdate(c, r)
  return checksums.cksumFinish(r, TOTAL)
})
add('unixsum', 'own', null, () => {
  let s = 0
  for (const c of chunks) s = checksums.bsdSum(c, s)
  return s
})

const nodeRs = load('@node-rs/crc32')
if (nodeRs) {
  add('crc32c', 'native', '@node-rs/crc32', () => {
    let crc = 0
    for (const c of chunks) crc = nodeRs.crc32c(c, crc)
    return crc >>> 0
  })
}

const sheetCrc32c = load('crc-32/crc32c')
if (sheetCrc32c) {
  add('crc32c', 'crc32c.buf', 'crc-32', () => {
    let crc = 0
    for (const c of chunks) crc = sheetCrc32c.buf(c, crc)
    return crc >>> 0
  })
}

const sheetAdler = load('adler-32')
if (sheetAdler) {
  add('adler', 'buf', 'adler-32', () => {
    let a = 1
    for (const c of chunks) a = sheetAdler.buf(c, a)
    return a >>> 0
  })
}

function version (name) {
  const pkg = load(name + '/package.json')
  return pkg ? pkg.version : '?'
}

function median (values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

// Wall-clock rate, plus the rate by this process's CPU time: on a shared
// machine the second one is less disturbed by other processes.
function measure (run) {
  const expected = run() // warm-up
  const rates = []
  const cpuRates = []
  for (let r = 0; r < RUNS; r++) {
    const cpu = process.cpuUsage()
    const start = process.hrtime.bigint()
    const value = run()
    const seconds = Number(process.hrtime.bigint() - start) / 1e9
    const used = process.cpuUsage(cpu)
    assert.strictEqual(value, expected)
    rates.push(TOTAL / 1048576 / seconds)
    cpuRates.push(TOTAL / 1048576 / ((used.user + used.system) / 1e6))
  }
  return { value: expected, rate: median(rates), cpuRate: median(cpuRates) }
}

async function main () {
  // hash-wasm's hashers are created asynchronously; reuse one per algorithm.
  const hashWasm = load('hash-wasm')
  if (hashWasm) {
    const crc = await hashWasm.createCRC32(0x82F63B78)
    const adler = await hashWasm.createAdler32()
    for (const [algorithm, hasher] of [['crc32c', crc], ['adler', adler]]) {
      add(algorithm, 'WebAssembly', 'hash-wasm', () => {
        hasher.init()
        for (const c of chunks) hasher.update(c)
        return Buffer.from(hasher.digest('binary')).readUInt32BE(0)
      })
    }
  }

  console.log(`node ${process.version}, ${TOTAL / 1048576} MiB in ${CHUNK / 1024} KiB chunks, median of ${RUNS}`)
  const reference = new Map()
  for (const c of candidates) {
    const { value, rate, cpuRate } = measure(c.run)
    if (!reference.has(c.algorithm)) reference.set(c.algorithm, value)
    const agrees = reference.get(c.algorithm) === value ? 'ok' : 'MISMATCH'
    const label = c.pkg ? `${c.pkg}@${version(c.pkg)} ${c.name}` : c.name
    console.log(
      c.algorithm.padEnd(10),
      label.padEnd(36),
      rate.toFixed(0).padStart(6), 'MiB/s',
      `(CPU time: ${cpuRate.toFixed(0).padStart(5)})`,
      value.toString(16).padStart(8, '0'),
      agrees
    )
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
