// The README's examples are real programs: every js/mjs/ts block of the
// README is found verbatim in one of examples/*.mjs, and those programs run
// here as a user runs them, in child processes (test/package/example-helpers.ts).
// Real requests follow, and every digest
// is recomputed with node:crypto over the bytes actually received. The
// README's curl commands run with curl (and bash, openssl, base64) against
// the example each one names.
import { test } from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { generateKeyPairSync, verify } from 'node:crypto'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http'
import { connect as h2Connect, type IncomingHttpHeaders as H2Headers } from 'node:http2'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { examplesDir, plainEnv, root, runClient, startExample } from './example-helpers'
import { EMPTY_SHA256, decode, sf } from '../helpers'
import { pipedTrailersLost } from '../loaded-majors'
import { BOUNDARY, MULTIPART_TYPE, multipartBody, type TapTest } from '../plugin/request/upload-helpers'
import { chromiumOrSkip, dumpDom } from '../browser/browser-helpers'

/** The fenced js/mjs/ts blocks of a Markdown text, trimmed, with their first line as a name. */
function codeBlocks (markdown: string): Array<{ name: string, code: string }> {
  const out: Array<{ name: string, code: string }> = []
  for (const match of markdown.matchAll(/^```(js|mjs|javascript|ts|typescript)[ \t]*\n([\s\S]*?)^```/gm)) {
    const code = (match[2] as string).trim()
    out.push({ name: `block ${out.length + 1} (${match[1] as string}): ${code.split('\n')[0] as string}`, code })
  }
  return out
}

interface Reply {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
  trailers: Record<string, string | undefined>
}

/** One HTTP/1.1 request on a new connection, the body and trailers as received. */
function h1 (port: number, path: string, { method = 'GET', headers = {}, body }: { method?: string, headers?: OutgoingHttpHeaders, body?: Buffer } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks), trailers: res.trailers }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** One HTTP/2 (h2c) request, the body and trailers as received. */
function h2 (port: number, headers: Record<string, string>, body?: Buffer): Promise<{ headers: H2Headers, body: Buffer, trailers: H2Headers }> {
  return new Promise((resolve, reject) => {
    const session = h2Connect(`http://127.0.0.1:${port}`)
    session.on('error', reject)
    const stream = session.request(headers, { endStream: body === undefined })
    let responseHeaders: H2Headers = {}
    let trailers: H2Headers = {}
    const chunks: Buffer[] = []
    stream.on('response', (h) => { responseHeaders = h })
    stream.on('trailers', (h) => { trailers = h })
    stream.on('data', (chunk: Buffer) => chunks.push(chunk))
    stream.on('end', () => {
      session.close()
      resolve({ headers: responseHeaders, body: Buffer.concat(chunks), trailers })
    })
    stream.on('error', reject)
    if (body !== undefined) stream.end(body)
  })
}

/** A folder of the test's own as os.tmpdir() of an example (removed at teardown). */
function ownTmpdir (t: TapTest): { dir: string, env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'digest-example-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return { dir, env: { TMPDIR: dir, TMP: dir, TEMP: dir } }
}

const readme = readFileSync(join(root, 'README.md'), 'utf8')

test('every js/mjs/ts block of the README is found verbatim in examples/*.mjs', async (t) => {
  const examples = readdirSync(examplesDir).filter((name) => name.endsWith('.mjs'))
    .map((name) => readFileSync(join(examplesDir, name), 'utf8'))
  const blocks = codeBlocks(readme)
  t.ok(blocks.length >= 8, `the README has ${blocks.length} code blocks`)
  for (const { name, code } of blocks) {
    t.ok(examples.some((source) => source.includes(code)), `README ${name}`)
  }
  t.same(codeBlocks('```js\n a()\n```\n```sh\nnpm i\n```\n```ts\nb()\n```'), [
    { name: 'block 1 (js): a()', code: 'a()' },
    { name: 'block 2 (ts): b()', code: 'b()' }
  ])
})

test('the README gives the fresh-clone commands CI runs', async (t) => {
  t.match(readme, 'npm ci && npm start')
  t.match(readme, 'npm ci && npm test')
})

test('quick-start.mjs, and fetch-verify.mjs against it', async (t) => {
  const port = await startExample(t, 'quick-start.mjs')
  const zipped = await h1(port, '/items', { headers: { 'accept-encoding': 'gzip', 'want-content-digest': 'sha-512=10' } })
  t.equal(zipped.status, 200)
  t.equal(zipped.headers['content-encoding'], 'gzip')
  t.equal(zipped.headers['content-digest'], sf(zipped.body, 'sha-512'), 'Content-Digest: the gzip bytes sent')
  const json = gunzipSync(zipped.body)
  t.equal(JSON.parse(json.toString()).items.length, 200)
  t.equal(zipped.headers['repr-digest'], sf(json, 'sha-512'), 'Repr-Digest: the JSON before compression, in sha-512 (no Want-Repr-Digest: it follows Want-Content-Digest)')
  t.match(zipped.headers.vary, /Want-Content-Digest/i)

  const plain = await h1(port, '/items')
  t.equal(plain.headers['content-encoding'], undefined)
  t.equal(plain.headers['content-digest'], sf(plain.body), 'unsolicited sha-256')
  t.equal(plain.headers['repr-digest'], sf(plain.body))
  t.same(plain.body, json, 'the same representation')

  const out = await runClient('fetch-verify.mjs', [`http://127.0.0.1:${port}/items`])
  t.match(out, /^Repr-Digest verified: \d+ bytes, content-encoding (gzip|br|deflate)\n$/, 'fetch decoded a compressed body and checked its Repr-Digest')
})

test('undici-client.mjs against quick-start.mjs: a checked download through request and fetch', async (t) => {
  const port = await startExample(t, 'quick-start.mjs')
  const out = await runClient('undici-client.mjs', [`http://127.0.0.1:${port}/items`])
  t.match(out, /^verified: \d+ gzip bytes \(gzip\), 200 items\n$/)
})

test('verify-signed-response.mjs against signed-response.mjs: response signatures (RFC 9421) over the digests, checked with them', async (t) => {
  const env = { RESPONSE_KEY: join(mkdtempSync(join(tmpdir(), 'digest-response-key-')), 'key.json') }
  t.teardown(() => rmSync(dirname(env.RESPONSE_KEY), { recursive: true, force: true }))
  const port = await startExample(t, 'signed-response.mjs', env)
  const out = await runClient('verify-signed-response.mjs', [`http://127.0.0.1:${port}`], env)
  t.equal(out, 'POST /payments 201 {"id":"pay-1","amount":42,"status":"accepted"}\nGET /payments/pay-1 200 {"id":"pay-1","status":"settled"}\n')
})

test('routes.mjs: per-route options, a live stream, a declared digest', async (t) => {
  const port = await startExample(t, 'routes.mjs')

  const report = await h1(port, '/report')
  t.equal(report.headers['content-digest'], sf(report.body, 'sha-512'), 'the route sends sha-512')
  t.equal(report.headers['repr-digest'], sf(report.body), 'the plugin default, sha-256')

  const health = await h1(port, '/health')
  t.equal(health.body.toString(), 'ok')
  t.equal(health.headers['content-digest'], undefined, 'digest: false')
  t.equal(health.headers['repr-digest'], undefined)

  const ticks = await h1(port, '/ticks')
  t.equal(ticks.body.toString(), 'data: tick 1\n\ndata: tick 2\n\ndata: tick 3\n\n')
  t.equal(ticks.headers['content-digest'], undefined, 'a live stream without TE: trailers has no digest')
  const trailed = await h1(port, '/ticks', { headers: { te: 'trailers' } })
  t.equal(trailed.trailers['content-digest'], sf(trailed.body), 'with TE: trailers, as a trailer', { skip: pipedTrailersLost })
  t.equal(trailed.trailers['repr-digest'], sf(trailed.body), { skip: pipedTrailersLost })

  const missing = await h1(port, '/upload', { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from('{"a":1}') })
  t.equal(missing.status, 400, 'verify: required refuses a body without a digest')
  t.match(missing.headers['content-type'], 'application/problem+json')
  t.match(JSON.parse(missing.body.toString()), { status: 400, code: 'FST_DIGEST_MISSING' })
  t.ok(missing.headers['want-content-digest'], 'and names the digests it accepts')
  const body = Buffer.from('{"a":1}')
  const verified = await h1(port, '/upload', { method: 'POST', headers: { 'content-type': 'application/json', 'content-digest': sf(body) }, body })
  t.equal(verified.status, 200)
  t.match(JSON.parse(verified.body.toString()), { verification: { verified: true } })

  const stored = 'stored document\n'
  const head = await h1(port, '/stored', { method: 'HEAD' })
  t.equal(head.headers['content-digest'], EMPTY_SHA256, 'HEAD: the empty content')
  t.equal(head.headers['repr-digest'], sf(stored), 'HEAD: the declared digest')
  const get = await h1(port, '/stored')
  t.equal(get.body.toString(), stored)
  t.equal(get.headers['repr-digest'], sf(get.body))
})

test('upload.mjs, and fetch-upload.mjs against it', async (t) => {
  const saves = ownTmpdir(t)
  const port = await startExample(t, 'upload.mjs', saves.env)
  const content = Buffer.from('a photo, byte for byte\n'.repeat(100))
  const form = multipartBody(content)
  const ok = await h1(port, '/upload', { method: 'POST', headers: { 'content-type': MULTIPART_TYPE, 'content-digest': sf(form) }, body: form })
  t.equal(ok.status, 200)
  const answer = JSON.parse(ok.body.toString()) as { saved: string, verified: boolean }
  t.equal(answer.verified, true)
  t.equal(dirname(answer.saved), saves.dir)
  t.same(readFileSync(answer.saved), content, 'the file was saved')
  rmSync(answer.saved)

  // A body that arrives in many chunks: the file is open and written to
  // when the check fails at the end.
  const large = multipartBody(Buffer.alloc(1024 * 1024, 'a photo, byte for byte\n'))
  const tampered = Buffer.from(large)
  tampered[100_000] = 0x2a
  const refused = await h1(port, '/upload', { method: 'POST', headers: { 'content-type': MULTIPART_TYPE, 'content-digest': sf(large) }, body: tampered })
  t.equal(refused.status, 400, 'a changed body is refused')
  t.match(JSON.parse(refused.body.toString()), { type: 'https://iana.org/assignments/http-problem-types#digest-mismatched-values', code: 'FST_DIGEST_MISMATCH' })
  t.same(readdirSync(saves.dir), [], 'no partial file left behind')

  const fieldOnly = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="title"\r\n\r\nno file\r\n--${BOUNDARY}--\r\n`)
  const noFile = await h1(port, '/upload', { method: 'POST', headers: { 'content-type': MULTIPART_TYPE, 'content-digest': sf(fieldOnly) }, body: fieldOnly })
  t.equal(noFile.status, 400, 'a form without a file')
  t.same(JSON.parse(noFile.body.toString()), { error: 'no file' })

  const noDigest = await h1(port, '/upload', { method: 'POST', headers: { 'content-type': MULTIPART_TYPE }, body: form })
  t.equal(noDigest.status, 400, 'verify: required on the route')

  const out = await runClient('fetch-upload.mjs', [`http://127.0.0.1:${port}`])
  t.match(out, /^201 /)
  t.match(JSON.parse(out.slice(4)), {
    stored: { title: 'New Title' },
    verification: { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }
  })
})

test('undici-upload.mjs against upload.mjs: a FormData file through request and fetch, with its Content-Digest', async (t) => {
  const saves = ownTmpdir(t)
  const port = await startExample(t, 'upload.mjs', saves.env)
  const photo = join(examplesDir, 'public', 'hello.json')
  const out = await runClient('undici-upload.mjs', [`http://127.0.0.1:${port}`, photo])
  const lines = out.trim().split('\n')
  t.equal(lines.length, 2, out)
  for (const line of lines) {
    t.match(line, /^200 /, 'verify: required on the route, so the digest was there and matched')
    const answer = JSON.parse(line.slice(4)) as { saved: string, verified: boolean }
    t.equal(answer.verified, true)
    t.same(readFileSync(answer.saved), readFileSync(photo), 'the file arrived whole')
  }
  t.equal(readdirSync(saves.dir).length, 2, 'a file of its own for each upload')
})

test('static.mjs: 200, 206 and HEAD of a file, with staticHeaders alone and in a setHeaders of one\'s own', async (t) => {
  const port = await startExample(t, 'static.mjs')
  const file = readFileSync(join(examplesDir, 'public', 'hello.json'))
  // The setHeaders of one's own first, while the file's digest is not cached
  // yet: only staticHeaders can tell these responses which file they stand for.
  const mineHead = await h1(port, '/hello.json', { method: 'HEAD' })
  t.equal(mineHead.status, 200)
  t.equal(mineHead.headers['x-mine'], '1', 'the header of one\'s own')
  t.equal(mineHead.headers['content-digest'], EMPTY_SHA256)
  t.equal(mineHead.headers['repr-digest'], sf(file), 'HEAD: the whole file')
  const minePart = await h1(port, '/hello.json', { headers: { range: 'bytes=2-7' } })
  t.equal(minePart.status, 206)
  t.equal(minePart.body.toString(), file.subarray(2, 8).toString())
  t.equal(minePart.headers['content-digest'], sf(minePart.body), '206: the part')
  t.equal(minePart.headers['repr-digest'], sf(file), '206: the whole file')

  const full = await h1(port, '/plain/hello.json', { headers: { 'accept-encoding': 'gzip' } })
  t.equal(full.status, 200)
  t.equal(full.headers['x-mine'], undefined, 'staticHeaders alone')
  t.equal(full.headers['content-digest'], sf(full.body), 'the bytes sent')
  t.equal(full.headers['repr-digest'], sf(decode(full.body, full.headers['content-encoding'])))
  t.same(decode(full.body, full.headers['content-encoding']), file)
  const part = await h1(port, '/plain/hello.json', { headers: { range: 'bytes=0-3' } })
  t.equal(part.status, 206)
  t.equal(part.headers['content-digest'], sf(file.subarray(0, 4)))
  t.equal(part.headers['repr-digest'], sf(file))
  const head = await h1(port, '/plain/hello.json', { method: 'HEAD' })
  t.equal(head.headers['content-digest'], EMPTY_SHA256)
  t.equal(head.headers['repr-digest'], sf(file))
})

test('http2.mjs: trailers of a stream, and an upload without Content-Length', async (t) => {
  const port = await startExample(t, 'http2.mjs')
  const lines = 'line 1\nline 2\nline 3\nline 4\nline 5\n'
  const trailed = await h2(port, { ':path': '/stream', te: 'trailers' })
  t.equal(trailed.body.toString(), lines)
  t.equal(trailed.headers['content-digest'], undefined, 'not in the headers')
  t.equal(trailed.trailers['content-digest'], sf(trailed.body), 'in the trailers')
  t.equal(trailed.trailers['repr-digest'], sf(trailed.body))
  const buffered = await h2(port, { ':path': '/stream' })
  t.equal(buffered.headers['content-digest'], sf(buffered.body), 'without TE: trailers, buffered and in the headers')

  const body = Buffer.from('{"hello":"h2"}')
  const verified = await h2(port, { ':path': '/echo', ':method': 'POST', 'content-type': 'application/json', 'content-digest': sf(body) }, body)
  t.equal(verified.headers[':status'], 200)
  t.match(JSON.parse(verified.body.toString()), { verification: { verified: true } })
  const refused = await h2(port, { ':path': '/echo', ':method': 'POST', 'content-type': 'application/json', 'content-digest': sf('other') }, body)
  t.equal(refused.headers[':status'], 400)
  t.match(JSON.parse(refused.body.toString()), { code: 'FST_DIGEST_MISMATCH' })
})

/** The commands of a shell block: lines joined at a trailing backslash. */
function shellCommands (block: string): string[] {
  return block.replace(/\\\n/g, '').split('\n').map((line) => line.trim()).filter((line) => line !== '')
}

/** Runs a command with bash in `cwd`; resolves with its standard output. */
function shell (command: string, cwd: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', command], { cwd, env: plainEnv(), encoding: 'buffer', timeout: 10_000 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`${command}: ${err.message}\n${stderr.toString()}`))
      else resolve(stdout)
    })
  })
}

/** What `curl -si` prints: the status, the headers, and the body (with --raw, chunked: de-chunked, and the trailers). */
function curlReply (out: Buffer): Reply {
  const end = out.indexOf('\r\n\r\n')
  const [statusLine, ...lines] = out.subarray(0, end).toString('latin1').split('\r\n')
  const fields = (list: string[]): Record<string, string> => Object.fromEntries(list.map((line) => {
    const colon = line.indexOf(':')
    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
  }))
  const headers = fields(lines)
  let body = out.subarray(end + 4)
  let trailers: Record<string, string> = {}
  if (headers['transfer-encoding'] === 'chunked' && /^[0-9a-f]+\r\n/i.test(body.toString('latin1', 0, 10))) {
    const chunks: Buffer[] = []
    let at = 0
    for (;;) {
      const lineEnd = body.indexOf('\r\n', at)
      const size = parseInt(body.toString('latin1', at, lineEnd), 16)
      at = lineEnd + 2
      if (size === 0) break
      chunks.push(body.subarray(at, at + size))
      at += size + 2
    }
    trailers = fields(body.toString('latin1', at).split('\r\n').filter((line) => line !== ''))
    body = Buffer.concat(chunks)
  }
  return { status: Number(statusLine?.split(' ')[1]), headers, body, trailers }
}

test('sri.mjs: the page names the key of SRI_KEY; its script is signed and runs in Chromium', async (t) => {
  const { dir } = ownTmpdir(t)
  const pair = generateKeyPairSync('ed25519')
  const keyFile = join(dir, 'sri.pem')
  writeFileSync(keyFile, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }))
  const port = await startExample(t, 'sri.mjs', { SRI_KEY: keyFile })
  const keyid = pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')
  const page = await h1(port, '/')
  t.match(page.body.toString(), `integrity="ed25519-${keyid}" crossorigin="anonymous"`, 'the page names the key')
  const params = `("unencoded-digest";sf);keyid="${keyid}";tag="ed25519-integrity"`
  const script = await h1(port, '/app.js', { headers: { 'accept-signature': `sig0=${params}`, 'accept-encoding': 'gzip' } })
  const body = decode(script.body, script.headers['content-encoding'])
  t.equal(script.headers['unencoded-digest'], sf(body), 'the decoded script\'s digest')
  t.equal(script.headers['signature-input'], `sig0=${params}`)
  const signature = Buffer.from(/^sig0=:(.*):$/.exec(script.headers.signature as string)?.[1] as string, 'base64')
  const base = `"unencoded-digest";sf: ${sf(body)}\n"@signature-params": ${params}`
  t.ok(verify(null, Buffer.from(base), pair.publicKey, signature), 'signed with the key of SRI_KEY')
  const { chromium, skip } = chromiumOrSkip()
  if (skip !== false) {
    t.comment(skip)
    return
  }
  const dom = await dumpDom(chromium, `http://127.0.0.1:${port}/`)
  t.match(dom, 'the signed script ran', 'Chromium ran it')
})

test('curlReply: a --raw chunked reply with trailers', async (t) => {
  const reply = curlReply(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\ncontent-digest: x\r\n\r\n'))
  t.same(reply, { status: 200, headers: { 'transfer-encoding': 'chunked', 'x-a': '1' }, body: Buffer.from('abcde'), trailers: { 'content-digest': 'x' } })
})

const shellTools = spawnSync('bash', ['-c', 'command -v curl && command -v openssl && command -v base64'], { encoding: 'utf8' })
const noShellTools = shellTools.status === 0 ? false : 'needs bash, curl, openssl and base64'

test('the README\'s curl commands, with curl, against the examples they name', { skip: noShellTools }, async (t) => {
  const cwd = mkdtempSync(join(tmpdir(), 'readme-curl-'))
  t.teardown(() => rmSync(cwd, { recursive: true, force: true }))

  // The Quick start's command and the headers the README shows it gets.
  const quick = /^```text\n\$ (curl .*)\n([\s\S]*?)^```/m.exec(readme)
  t.ok(quick, 'the Quick start\'s curl command')
  const quickPort = await startExample(t, 'quick-start.mjs')
  const zipped = curlReply(await shell((quick?.[1] as string).replace('localhost:3000', `127.0.0.1:${quickPort}`), cwd))
  t.equal(zipped.status, 200)
  for (const line of (quick?.[2] as string).trim().split('\n')) {
    const [name, shown] = line.split(/: (.*)/) as [string, string]
    const got = zipped.headers[name]
    if (shown.includes('…')) t.match(got, new RegExp(`^${shown.slice(0, shown.indexOf('…'))}`), name)
    else t.equal(got, shown, name)
  }

  // The recipes: against `npm start` (examples/server.js).
  const recipes = /^\*\*curl\*\* \(([^)]*)\)[^\n]*\n\n```sh\n([\s\S]*?)^```/m.exec(readme)
  t.match(recipes?.[1], '`examples/server.js`', 'the recipes name their app')
  const port = await startExample(t, 'server.js')
  const replies: Reply[] = []
  for (const command of shellCommands(recipes?.[2] as string)) {
    t.notMatch(command, /localhost:(?!3000\/)/, 'every URL on the port of the example')
    replies.push(curlReply(await shell(command.replaceAll('localhost:3000', `127.0.0.1:${port}`), cwd)))
  }
  const [asked, streamed, written, uploaded] = replies as [Reply, Reply, Reply, Reply]
  t.equal(asked.status, 200)
  t.equal(asked.headers['content-digest'], sf(asked.body), 'asked for: sha-256')
  t.equal(asked.headers['repr-digest'], sf(asked.body))
  t.equal(streamed.status, 200)
  t.equal(streamed.headers['content-digest'], undefined)
  t.equal(streamed.trailers['content-digest'], sf(streamed.body), 'a stream\'s digests as trailers', { skip: pipedTrailersLost })
  t.equal(streamed.trailers['repr-digest'], sf(streamed.body), { skip: pipedTrailersLost })
  t.equal(written.body.length, 0, 'printf writes body.json')
  t.equal(uploaded.status, 201, 'uploaded with its digest')
  t.match(JSON.parse(uploaded.body.toString()), { verification: { verified: true, fields: [{ field: 'Content-Digest', ok: true }] } })
})

// Each example ships in the package (examples/): it says what a project needs installed to run it, and imports
// nothing else but node: builtins and its sibling files; a client names the server example it talks to.
test('every example names the packages it needs, and imports nothing else', async (t) => {
  for (const name of readdirSync(examplesDir).filter((n) => n.endsWith('.mjs'))) {
    const text = readFileSync(join(examplesDir, name), 'utf8')
    const needs = /^\/\/ Needs: npm i (.+)$/m.exec(text)?.[1]?.split(' ') ?? []
    t.ok(needs.includes('fastify-digest-fields'), `${name}: a Needs line naming the package`)
    const imported = [...text.matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1] as string)
      .filter((spec) => !spec.startsWith('node:') && !spec.startsWith('.'))
      .map((spec) => spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0] as string)
    t.same([...new Set(imported)].filter((p) => !needs.includes(p)), [], `${name}: imports only what it needs`)
    // A client (a program that starts no server) names the example it talks to, which exists.
    if (/^\/\/ Run/m.test(text) && !/\.listen\(/.test(text)) {
      const server = /Run against examples\/([\w-]+\.m?js)/.exec(text)?.[1]
      t.ok(server !== undefined && readdirSync(examplesDir).includes(server), `${name}: talks to ${server ?? 'a server it does not name'}`)
    }
  }
})
