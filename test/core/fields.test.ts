import { test } from 'tap'
import { parseDictionary } from 'structured-headers'
import {
  parseDigestField,
  serializeDigestField,
  serializeSelected,
  digestFieldOf,
  fieldWriter,
  parseWantField,
  serializeWantField,
  parseLegacyDigest
} from '../../lib/core/fields'
import type { DigestAlgorithm, DigestMap } from '../../types/index'
import { digestAll } from '../../lib/core/digest-stream'

// RFC 9530 Appendix D: digests of `{"hello": "world"}` (no trailing LF).
const HELLO = {
  'sha-256': ['X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=', '5f8f04f6a3a892aaabbddb6cf273894493773960d4a325b105fee46eef4304f1'],
  'sha-512': [
    'WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==',
    '5990cf6959ffed7807680cbca66a23024196a11c765050a1178d40dacbd7f9368f9be01bc008015a7ac8898965bbb04d37279a95d54bbd1c049931d65ef2707b'
  ],
  md5: ['Sd/dVLAcvNLSq16eXua5uQ==', '49dfdd54b01cbcd2d2ab5e9e5ee6b9b9'],
  sha: ['07CavjDP4u3/TungoUHJO/Wzr4c=', 'd3b09abe30cfe2edff4ee9e0a141c93bf5b3af87'],
  unixsum: ['GQU=', '1905'],
  unixcksum: ['7zsHAA==', 'ef3b0700'],
  adler: ['OZkGFw==', '39990617'],
  crc32c: ['Q3lHIA==', '43794720']
} as const satisfies Record<DigestAlgorithm, readonly [string, string]>

const SHA256 = HELLO['sha-256'][0]
const SHA256_HEX = HELLO['sha-256'][1]
// `{"hello": "world"}` + LF, as in Appendix B; the RFC misprints it with `==` in B.5, B.6, B.11, C.1.
const RK = 'RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg'
const RK_HEX = '44aff4ab2d7c3250525675a08f0cfa9591168cffe51791c5f5bbc417c15a6c38'

type Entries = Array<[string, string | number]>

function hexEntries (map: DigestMap | null): Entries | null {
  return map === null ? null : [...map].map(([key, octets]) => [key, octets.toString('hex')])
}

// Expected outcome: null, the parsed members (key → hex octets, in map order),
// or { throws: a fragment of the FST_DIGEST_INVALID_FIELD reason }.
type DigestOutcome = null | Entries | { throws: string }

const DIGEST_TABLE: Array<[string, string | readonly string[] | undefined, DigestOutcome]> = [
  // RFC 9530 examples and Appendix D
  ['RFC 9530 sha-256', `sha-256=:${SHA256}:`, [['sha-256', SHA256_HEX]]],
  ['RFC 9530 sha-256 and sha-512', `sha-256=:${SHA256}:, sha-512=:${HELLO['sha-512'][0]}:`,
    [['sha-256', SHA256_HEX], ['sha-512', HELLO['sha-512'][1]]]],
  ['Appendix D, all eight algorithms', Object.entries(HELLO).map(([k, [b64]]) => `${k}=:${b64}:`).join(', '),
    Object.entries(HELLO).map(([k, [, hex]]) => [k, hex])],
  ['unixsum as an Integer', 'unixsum=6405', [['unixsum', '1905']]],
  ['unixsum as a Byte Sequence', 'unixsum=:GQU=:', [['unixsum', '1905']]],
  ['unixcksum as an Integer', 'unixcksum=4013623040', [['unixcksum', 'ef3b0700']]],
  ['unixsum 0 keeps its width', 'unixsum=0', [['unixsum', '0000']]],
  ['unixsum -0 is 0', 'unixsum=-0', [['unixsum', '0000']]],
  ['unixsum largest', 'unixsum=65535', [['unixsum', 'ffff']]],
  ['unixcksum largest', 'unixcksum=4294967295', [['unixcksum', 'ffffffff']]],
  // out-of-range Integers become 8 octets: verification says invalid-length
  ['unixsum too large', 'unixsum=65536', [['unixsum', '0000000000010000']]],
  ['unixsum negative', 'unixsum=-1', [['unixsum', 'ffffffffffffffff']]],
  ['unixcksum too large', 'unixcksum=4294967296', [['unixcksum', '0000000100000000']]],
  ['unixsum with 16 digits', 'unixsum=1000000000000000', { throws: 'Exceeded maximum integer length' }],
  // a Decimal is not an Integer, even with an integral value (RFC 8941 §3.3.1, §4.2.4)
  ['unixsum as an integral Decimal', 'unixsum=6405.0', { throws: 'unixsum must be a Byte Sequence or an Integer' }],
  ['unixcksum as an integral Decimal', 'unixcksum=4013623040.000', { throws: 'unixcksum must be a Byte Sequence or an Integer' }],
  ['unixsum as -0.0', 'unixsum=-0.0', { throws: 'unixsum must be a Byte Sequence or an Integer' }],
  ['an integral Decimal among valid members', `sha-256=:${SHA256}:, unixsum=6405.0`, { throws: 'unixsum must be a Byte Sequence or an Integer' }],
  ['an integral Decimal in a later field line', ['unixsum=6405', 'unixsum=6405.0'], { throws: 'unixsum must be a Byte Sequence or an Integer' }],
  ['an integral Decimal overridden by a later Integer', ['unixsum=6405.0', 'unixsum=6405'], [['unixsum', '1905']]],
  ['Decimals elsewhere: key, Token, String, parameters, Inner List, unknown key',
    'a.0=tok.0, b="1.0,x=2.0", c=(1.0 2.0);p=3.0, foo=1.0, unixsum=6405;q=1.0, unixcksum=4013623040;r="9.0"',
    [['unixsum', '1905'], ['unixcksum', 'ef3b0700']]],
  ['unixsum as a Decimal', 'unixsum=1.5', { throws: 'unixsum must be a Byte Sequence or an Integer' }],
  ['unixsum as a String', 'unixsum="6405"', { throws: 'unixsum must be a Byte Sequence or an Integer' }],
  // absent and empty
  ['undefined', undefined, null],
  ['empty string', '', null],
  ['blank (SP, HTAB)', ' \t ', null],
  ['no field lines', [], null],
  ['blank field lines', ['', '  '], null],
  // field lines and duplicates
  ['two field lines', [`sha-256=:${SHA256}:`, 'sha-512=:Ag==:'], [['sha-256', SHA256_HEX], ['sha-512', '02']]],
  ['blank field lines are skipped', ['', 'sha-256=:AQ==:', ' '], [['sha-256', '01']]],
  ['duplicate key in a later line wins', ['sha-256=:AQ==:', 'sha-256=:Ag==:'], [['sha-256', '02']]],
  ['duplicate key in one line: last wins', 'sha-256=:AQ==:, sha-256=:Ag==:', [['sha-256', '02']]],
  ['duplicate key keeps its first position', 'sha-256=:AQ==:, md5=:Aw==:, sha-256=:Ag==:', [['sha-256', '02'], ['md5', '03']]],
  ['OWS around commas, leading/trailing OWS', '\t sha-256=:AQ==:\t,\tsha-512=:Ag==:  ', [['sha-256', '01'], ['sha-512', '02']]],
  // parameters (ignored)
  ['parameters are ignored', 'sha-256=:AQ==:;foo=1;bar="x";baz', [['sha-256', '01']]],
  ['`;` starts a parameter, not a member', 'sha-256=:AQ==:; sha-512=:Ag==:', [['sha-256', '01']]],
  ['parameters on an Integer unixsum', 'unixsum=6405;a=?0', [['unixsum', '1905']]],
  // base64 inside Byte Sequences
  ['missing padding is accepted', `sha-256=:${RK}:`, [['sha-256', RK_HEX]]],
  ['non-zero pad bits are accepted', 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDh=:', [['sha-256', RK_HEX]]],
  ['correct padding', `sha-256=:${RK}=:`, [['sha-256', RK_HEX]]],
  ['over-padding (RFC 9530 B.5 typo) is rejected', `sha-256=:${RK}==:`, { throws: 'ByteSequence does not contain a valid base64 string' }],
  ['padding in the middle', 'sha-256=:AA==AA==:', { throws: 'ByteSequence does not contain a valid base64 string' }],
  ['impossible base64 length', 'sha-256=:A:', { throws: 'ByteSequence does not contain a valid base64 string' }],
  ['base64url `-`', 'sha-256=:AQ-B:', { throws: 'ByteSequence does not contain a valid base64 string' }],
  ['base64url `_`', 'sha-256=:AQ_B:', { throws: 'ByteSequence does not contain a valid base64 string' }],
  ['percent-encoded base64', 'sha-256=:AQ%3D%3D:', { throws: 'ByteSequence does not contain a valid base64 string' }],
  ['space inside a Byte Sequence', 'sha-256=:AQ ID:', { throws: 'ByteSequence does not contain a valid base64 string' }],
  ['unterminated Byte Sequence', 'sha-256=:AQID', { throws: 'Could not find a closing ":"' }],
  ['empty Byte Sequence (wrong length: parsed)', 'sha-256=::', [['sha-256', '']]],
  // SF syntax errors
  ['uppercase key', `SHA-256=:${SHA256}:`, { throws: 'A key must begin with an asterisk or letter (a-z) at offset 0' }],
  ['uppercase later in the key', 'sha-256=:AQ==:, Sha-512=:Ag==:', { throws: 'A key must begin' }],
  ['missing colons around base64 with `=`', `sha-256=${SHA256}`, { throws: 'Expected ,' }],
  ['missing colons, token-shaped value', 'sha-256=abc', { throws: 'sha-256 must be a Byte Sequence' }],
  ['trailing comma', 'sha-256=:AQ==:,', { throws: 'trailing comma' }],
  ['trailing comma and space', 'sha-256=:AQ==:, ', { throws: 'trailing comma' }],
  ['leading comma', ',sha-256=:AQ==:', { throws: 'A key must begin' }],
  ['empty member', 'sha-256=:AQ==:,,sha-512=:Ag==:', { throws: 'A key must begin' }],
  ['`;` as member separator with no parameter key', 'sha-256=:AQ==:;', { throws: 'A key must begin' }],
  ['whitespace around `=`', 'sha-256 = :AQ==:', { throws: 'Expected ,' }],
  ['legacy RFC 3230 syntax is not a Structured Field', `SHA-256=${SHA256}`, { throws: 'A key must begin' }],
  // wrong member types for known keys
  ['Integer for sha-256', 'sha-256=1', { throws: 'sha-256 must be a Byte Sequence' }],
  ['Decimal for sha-256', 'sha-256=1.5', { throws: 'sha-256 must be a Byte Sequence' }],
  ['String for sha-256', 'sha-256="abc"', { throws: 'sha-256 must be a Byte Sequence' }],
  ['Token for md5', 'md5=abc', { throws: 'md5 must be a Byte Sequence' }],
  ['bare key (Boolean true)', 'sha-256', { throws: 'sha-256 must be a Byte Sequence' }],
  ['Boolean false', 'sha-512=?0', { throws: 'sha-512 must be a Byte Sequence' }],
  ['Inner List', 'sha-256=(:AQ==:)', { throws: 'sha-256 must be a Byte Sequence' }],
  ['Date', 'adler=@1659578233', { throws: 'adler must be a Byte Sequence' }],
  ['Display String', 'crc32c=%"x"', { throws: 'crc32c must be a Byte Sequence' }],
  ['one bad member spoils the field', 'sha-256=:AQ==:, sha-512=1', { throws: 'sha-512 must be a Byte Sequence' }],
  // unknown algorithms: Byte Sequences kept, anything else dropped
  ['unknown key, Byte Sequence: kept', 'foo=:AQ==:', [['foo', '01']]],
  ['removed draft key id-sha-256: kept as unknown', 'id-sha-256=:AQ==:, sha-256=:Ag==:', [['id-sha-256', '01'], ['sha-256', '02']]],
  ['unknown key, Integer: dropped', 'foo=1, sha-256=:AQ==:', [['sha-256', '01']]],
  ['only dropped members', 'foo=1, bar, baz="x", qux=(1 2)', null],
  ['prototype-like key', 'constructor=1, tostring=2', null],
  // wrong lengths are parsed (verification reports invalid-length)
  ['sha-256 too short', 'sha-256=:AQ==:', [['sha-256', '01']]],
  ['sha-512 with a sha-256 value', `sha-512=:${SHA256}:`, [['sha-512', SHA256_HEX]]],
  // non-ASCII
  ['non-ASCII in a Byte Sequence', 'sha-256=:AQ\u00e9=:', { throws: 'ByteSequence does not contain a valid base64 string' }],
  ['non-ASCII key', '\u00e9=:AQ==:', { throws: 'A key must begin' }],
  ['non-ASCII in a String of an unknown key', 'foo="\u00e9", sha-256=:AQ==:', { throws: 'Strings must be in the ASCII range' }],
  ['non-ASCII after a member', 'sha-256=:AQ==:\u00e9', { throws: 'Expected ,' }],
  ['non-Latin-1 character', 'sha-256=:AQ==:, \u2603=:Ag==:', { throws: 'A key must begin' }]
]

test('parseDigestField: table of field values', async (t) => {
  for (const [name, value, outcome] of DIGEST_TABLE) {
    if (outcome !== null && !Array.isArray(outcome)) {
      const err = t.throws(() => parseDigestField(value), { code: 'FST_DIGEST_INVALID_FIELD', statusCode: 400 }, name)
      t.ok(err instanceof Error && err.message.startsWith('Malformed Content-Digest field: ') &&
        err.message.includes(outcome.throws), `${name}: reason`)
    } else {
      t.same(hexEntries(parseDigestField(value)), outcome, name)
    }
  }
})

test('parseDigestField: the field name goes into the error', async (t) => {
  t.throws(() => parseDigestField('sha-256=1', 'Repr-Digest'), {
    code: 'FST_DIGEST_INVALID_FIELD',
    message: 'Malformed Repr-Digest field: sha-256 must be a Byte Sequence'
  })
  t.throws(() => parseDigestField('SHA-256=:AQ==:', 'Repr-Digest'), {
    message: 'Malformed Repr-Digest field: Parse error: A key must begin with an asterisk or letter (a-z) at offset 0'
  })
})

test('parseDigestField: Unencoded-Digest values are Byte Sequences for every algorithm', async (t) => {
  t.same(hexEntries(parseDigestField('unixsum=6405', 'Repr-Digest')), [['unixsum', '1905']], 'Repr-Digest: an Integer')
  t.throws(() => parseDigestField('unixsum=6405', 'Unencoded-Digest'), {
    code: 'FST_DIGEST_INVALID_FIELD',
    message: 'Malformed Unencoded-Digest field: unixsum must be a Byte Sequence'
  })
  t.same(hexEntries(parseDigestField('unixsum=:GQU=:, unixcksum=:AAAAAQ==:', 'Unencoded-Digest')), [['unixsum', '1905'], ['unixcksum', '00000001']])
  t.equal(parseDigestField('foo=1', 'Unencoded-Digest'), null, 'an unknown key that is not a Byte Sequence is dropped')
})

test('parseDigestField: values that are not strings are absent', async (t) => {
  t.equal(parseDigestField(42 as unknown as string), null)
  t.equal(parseDigestField(null as unknown as string), null)
  t.same(hexEntries(parseDigestField([1 as unknown as string, 'sha-256=:AQ==:'])), [['sha-256', '01']])
})

test('parseDigestField: plain Byte Sequence members read without the general parser, as structured-headers reads them', async (t) => {
  // The Byte Sequence members of structured-headers' Dictionary, or its error.
  const reference = (value: string): Entries | string => {
    try {
      const out: Entries = []
      for (const [key, [item]] of parseDictionary(value)) if (item instanceof ArrayBuffer) out.push([key, Buffer.from(item).toString('hex')])
      return out
    } catch {
      return 'FST_DIGEST_INVALID_FIELD'
    }
  }
  const read = (value: string): Entries | string => {
    try {
      return hexEntries(parseDigestField(value)) ?? []
    } catch (err) {
      return (err as { code: string }).code
    }
  }
  const values = [
    'sha-256=:AQ==:', 'sha-256=:AQ==:, sha-512=:AAAA:', 'a=:QR==:,b=:QQ==:', 'a=:AQ==:, a=:AAAA:', '*k.-_=:AQID:\t,\tb=::',
    'a=:QR==:,', 'a=:AQ==:,,b=:AQ==:', 'a=:AQ==: ,b=:AQ==:', 'a=:AQ==:;p=1', 'a=:AQ:', 'a=:AQ===:', 'a=:A:', 'a=:AQ=A:',
    'A=:AQ==:', 'a=1, b=:AQ==:', 'a=:AQ==:, b', 'a=:AQ==: x'
  ]
  for (const value of values) t.same(read(value), reference(value), value)
})

test('parseDigestField: limits', async (t) => {
  const members = Array.from({ length: 1100 }, (_, i) => `k${i}=:AQ==:`)
  const many = parseDigestField(members.join(', '))
  t.equal(many?.size, 1100, '1100 members')
  t.equal(many?.get('k1099')?.toString('hex'), '01')

  const duplicates = parseDigestField(Array.from({ length: 2000 }, (_, i) => `sha-256=:${Buffer.from([i & 0xff]).toString('base64')}:`))
  t.same(hexEntries(duplicates), [['sha-256', 'cf']], '2000 field lines, last wins')

  const big = Buffer.alloc(49152, 0xab)
  const value = `sha-256=:${big.toString('base64')}:`
  t.equal(value.length, 65536 + 10)
  t.ok(parseDigestField(value)?.get('sha-256')?.equals(big), '64 KiB Byte Sequence')

  const spaces = ' '.repeat(65536)
  t.same(hexEntries(parseDigestField(`${spaces}sha-256=:AQ==:${spaces}`)), [['sha-256', '01']], '64 KiB of OWS')
  t.throws(() => parseDigestField(`sha-256=:AQ==:${spaces}x`), { code: 'FST_DIGEST_INVALID_FIELD' })
  t.throws(() => parseDigestField(`sha-256=:${'A'.repeat(65537)}`), { code: 'FST_DIGEST_INVALID_FIELD' })
})

test('serializeDigestField', async (t) => {
  const sha256 = Buffer.from(SHA256, 'base64')
  const sha512 = Buffer.from(HELLO['sha-512'][0], 'base64')
  t.equal(serializeDigestField([['sha-256', sha256], ['sha-512', sha512]]),
    `sha-256=:${SHA256}:, sha-512=:${HELLO['sha-512'][0]}:`, 'RFC 9530 §2 layout')
  t.equal(serializeDigestField(new Map([['sha-256', sha256]])), `sha-256=:${SHA256}:`, 'a Map')
  t.equal(serializeDigestField([]), '', 'nothing')

  const unix: Array<[DigestAlgorithm, Buffer]> = [
    ['unixsum', Buffer.from('1905', 'hex')],
    ['unixcksum', Buffer.from('ef3b0700', 'hex')]
  ]
  t.equal(serializeDigestField(unix), 'unixsum=6405, unixcksum=4013623040', 'default: Integers')
  t.equal(serializeDigestField(unix, { strict: false }), 'unixsum=6405, unixcksum=4013623040')
  t.equal(serializeDigestField(unix, {}), 'unixsum=6405, unixcksum=4013623040')
  t.equal(serializeDigestField(unix, { strict: true }), 'unixsum=:GQU=:, unixcksum=:7zsHAA==:', 'strict: Byte Sequences')
  t.equal(serializeDigestField([['unixsum', Buffer.alloc(2)], ['unixcksum', Buffer.alloc(4)]]), 'unixsum=0, unixcksum=0')
  t.equal(serializeDigestField([['unixsum', Buffer.from('010203', 'hex')]]), 'unixsum=:AQID:',
    'a value of the wrong width stays a Byte Sequence')
  t.equal(serializeDigestField([['adler', Buffer.from('39990617', 'hex')]]), 'adler=:OZkGFw==:', 'adler is always a Byte Sequence')
  t.equal(serializeDigestField([['sha-256', Buffer.alloc(0)]]), 'sha-256=::')
})

test('digestFieldOf: the value serializeSelected writes for the digests of the data, hashed in the same step', async (t) => {
  const data = '{"hello": "world"}'
  const lists: DigestAlgorithm[][] = [[], ['sha-256'], ['sha-512', 'sha-256'], ['unixsum'], ['sha-256', 'unixcksum', 'md5', 'sha', 'adler', 'crc32c', 'unixsum']]
  for (const list of lists) {
    for (const strict of [false, true]) {
      t.equal(digestFieldOf(list, data, strict), serializeSelected(digestAll(list, data), list, strict), `${list.join(',') || 'none'} strict=${strict}`)
    }
  }
  t.equal(digestFieldOf(['sha-256', 'unixsum'], data, false), `sha-256=:${SHA256}:, unixsum=6405`, 'Appendix D values')
})

test('fieldWriter: digestFieldOf for a list fixed in advance, null for none', async (t) => {
  const data = '{"hello": "world"}'
  const lists: DigestAlgorithm[][] = [['sha-256'], ['sha-512'], ['md5'], ['adler'], ['crc32c'], ['unixsum'], ['unixcksum'], ['sha-512', 'sha-256'], ['sha-256', 'unixcksum', 'md5', 'sha', 'adler', 'crc32c', 'unixsum']]
  for (const list of lists) {
    for (const strict of [false, true]) {
      const write = fieldWriter(list, strict)
      for (const bytes of [data, Buffer.from(data), '']) {
        t.equal(write?.(bytes), digestFieldOf(list, bytes, strict), `${list.join(',')} strict=${strict} ${typeof bytes}${bytes.length === 0 ? ' empty' : ''}`)
      }
    }
  }
  t.equal(fieldWriter(['sha-256'], false)?.(data), `sha-256=:${SHA256}:`, 'Appendix D value')
  t.equal(fieldWriter(['unixsum'], false)?.(data), 'unixsum=6405', 'an Integer in the default mode')
  t.equal(fieldWriter([], false), null)
  t.throws(() => fieldWriter(['sha-1' as DigestAlgorithm], false), { code: 'FST_DIGEST_UNKNOWN_ALGORITHM' }, 'checked when built')
})

test('serializeSelected: the members named, in the order named, as serializeDigestField writes them', async (t) => {
  const sha256 = Buffer.from(SHA256, 'base64')
  const sha512 = Buffer.from(HELLO['sha-512'][0], 'base64')
  const unixsum = Buffer.from('1905', 'hex')
  const digests = new Map<DigestAlgorithm, Buffer>([['sha-256', sha256], ['sha-512', sha512], ['unixsum', unixsum]])
  t.equal(serializeSelected(digests, ['sha-512', 'sha-256'], false),
    serializeDigestField([['sha-512', sha512], ['sha-256', sha256]]), 'order of the list, not of the map')
  t.equal(serializeSelected(digests, ['sha-256'], false), `sha-256=:${SHA256}:`, 'only those named')
  t.equal(serializeSelected(digests, ['md5', 'sha-256', 'adler'], false), `sha-256=:${SHA256}:`, 'absent ones skipped')
  t.equal(serializeSelected(digests, ['unixsum'], false), 'unixsum=6405', 'default: an Integer')
  t.equal(serializeSelected(digests, ['unixsum'], true), 'unixsum=:GQU=:', 'strict: a Byte Sequence')
  t.equal(serializeSelected(digests, ['md5'], false), null, 'none of them: null')
  t.equal(serializeSelected(digests, [], false), null, 'nothing asked: null')
  t.equal(serializeSelected(null, ['sha-256'], false), null, 'no digests: null')
})

test('serializeDigestField → parseDigestField round trips', async (t) => {
  const all = Object.entries(HELLO).map(([key, [b64]]) => [key as DigestAlgorithm, Buffer.from(b64, 'base64')] as const)
  const edge: Array<readonly [DigestAlgorithm, Buffer]> = [
    ['unixsum', Buffer.from('0001', 'hex')],
    ['unixcksum', Buffer.from('00000000', 'hex')],
    ['sha-256', Buffer.alloc(32, 0xff)]
  ]
  for (const digests of [all, edge]) {
    for (const strict of [false, true]) {
      const parsed = parseDigestField(serializeDigestField(digests, { strict }))
      t.same(hexEntries(parsed), digests.map(([k, v]) => [k, v.toString('hex')]), `strict: ${strict}`)
    }
  }
  t.equal(serializeDigestField(all), Object.entries(HELLO).map(([k, [b64]]) =>
    k === 'unixsum' ? 'unixsum=6405' : k === 'unixcksum' ? 'unixcksum=4013623040' : `${k}=:${b64}:`).join(', '))
})

// Expected outcome: null (the field is ignored) or its members in order.
const WANT_TABLE: Array<[string, string | readonly string[] | undefined, Entries | null]> = [
  ['RFC 9530 §4 example', 'sha-512=3, sha-256=10, unixsum=0', [['sha-512', 3], ['sha-256', 10], ['unixsum', 0]]],
  ['problem-types example', 'sha-512=3, sha-256=10', [['sha-512', 3], ['sha-256', 10]]],
  ['undefined', undefined, null],
  ['empty', '', null],
  ['blank', '   ', null],
  ['no field lines', [], null],
  ['two field lines', ['sha-256=1', 'sha-512=2'], [['sha-256', 1], ['sha-512', 2]]],
  ['duplicate: last wins', ['sha-256=1', 'sha-256=9'], [['sha-256', 9]]],
  ['weight 0', 'sha-256=0', [['sha-256', 0]]],
  ['weight -0 reads as 0', 'sha-256=-0', [['sha-256', 0]]],
  ['unknown keys kept', 'foo=5, sha-256=1', [['foo', 5], ['sha-256', 1]]],
  ['parameters ignored', 'sha-256=10;q=0.5, sha-512=1;foo', [['sha-256', 10], ['sha-512', 1]]],
  // a Decimal is not an Integer, even with an integral value (RFC 8941 §3.3.1, §4.2.4)
  ['integral Decimal', 'sha-512=10.0', null],
  ['integral Decimal among valid members', 'sha-256=1, sha-512=10.0', null],
  ['Decimal 0.0', 'sha-256=0.0', null],
  ['Decimal -0.0', 'sha-256=-0.0', null],
  ['integral Decimal in a later field line', ['sha-256=1', 'sha-512=3.0'], null],
  ['integral Decimal overridden by a later Integer', ['sha-256=3.0', 'sha-256=3'], [['sha-256', 3]]],
  ['dots in keys and parameters are not Decimals', 'a.b=1, sha-256=2;q=0.5;r="1.0"', [['a.b', 1], ['sha-256', 2]]],
  ['weight 11', 'sha-256=11', null],
  ['weight -1', 'sha-256=-1', null],
  ['one member out of range ignores the whole field', 'sha-256=10, sha-512=11', null],
  ['Decimal', 'sha-256=1.5', null],
  ['bare key (Boolean true)', 'sha-256', null],
  ['Boolean ?1', 'sha-256=?1', null],
  ['String', 'sha-256="10"', null],
  ['Token', 'sha-256=ten', null],
  ['Byte Sequence', 'sha-256=:AQ==:', null],
  ['Inner List', 'sha-256=(10)', null],
  ['Date', 'sha-256=@10', null],
  ['uppercase key', 'SHA-256=10', null],
  ['legacy Want-Digest syntax', 'MD5;q=0.3, sha;q=1', null],
  ['trailing comma', 'sha-256=10,', null],
  ['16-digit Integer', 'sha-256=1000000000000000', null],
  ['non-ASCII', 'sha-256=10, \u00e9=1', null]
]

test('parseWantField: table of field values', async (t) => {
  for (const [name, value, outcome] of WANT_TABLE) {
    const want = parseWantField(value)
    t.same(want === null ? null : [...want], outcome, name)
  }
  t.ok(Object.is(parseWantField('sha-256=-0')?.get('sha-256'), 0), '-0 is stored as +0')
  t.equal(parseWantField(7 as unknown as string), null, 'not a string')
})

test('parseWantField: limits', async (t) => {
  const many = parseWantField(Array.from({ length: 1100 }, (_, i) => `k${i}=${i % 11}`).join(', '))
  t.equal(many?.size, 1100)
  t.equal(many?.get('k1099'), 10)
  t.equal(parseWantField(`sha-256=1, foo="${'a'.repeat(65536)}"`)?.size, undefined, '64 KiB String member: ignored')
  t.equal(parseWantField(`sha-256=1;foo="${'a'.repeat(65536)}"`)?.get('sha-256'), 1, '64 KiB parameter: ignored')
})

test('serializeWantField', async (t) => {
  t.equal(serializeWantField([['sha-256', 10], ['sha-512', 3]]), 'sha-256=10, sha-512=3')
  t.equal(serializeWantField(new Map([['sha-512', 0]])), 'sha-512=0')
  t.equal(serializeWantField([]), '')
  const prefs: Array<[string, number]> = [['sha-512', 3], ['sha-256', 10], ['unixsum', 0], ['foo', 1]]
  t.same([...parseWantField(serializeWantField(prefs)) ?? []], prefs, 'round trip')

  for (const key of ['SHA-256', '', '1sha', 'sha 256', 'sha-256\r\nx']) {
    t.throws(() => serializeWantField([[key, 1]]), TypeError, JSON.stringify(key))
  }
  for (const weight of [11, -1, 1.5, Number.NaN, Infinity]) {
    t.throws(() => serializeWantField([['sha-256', weight]]), { name: 'TypeError', message: /weight for sha-256/ }, String(weight))
  }
})

const LEGACY_TABLE: Array<[string, string | readonly string[] | undefined, Entries | null]> = [
  ['ActivityPub SHA-256', `SHA-256=${SHA256}`, [['sha-256', SHA256_HEX]]],
  ['lowercase sha-256', `sha-256=${SHA256}`, [['sha-256', SHA256_HEX]]],
  ['SHA-512', `SHA-512=${HELLO['sha-512'][0]}`, [['sha-512', HELLO['sha-512'][1]]]],
  ['RFC 3230 md5 example', 'md5=HUXZLQLMuI/KZ5KDcJPcOA==', [['md5', '1d45d92d02ccb88fca6792837093dc38']]],
  ['RFC 3230 SHA + unixsum example', 'SHA=thvDyvhfIqlvFe+A9MYgxAfm1q5=,unixsum=30637',
    [['sha', 'b61bc3caf85f22a96f15ef80f4c620c407e6d6ae'], ['unixsum', '77ad']]],
  ['RFC 3230 ADLER32 example', 'ADLER32=03da0195', [['adler', '03da0195']]],
  ['ADLER32 without leading zero', 'ADLER32=3DA0195', [['adler', '03da0195']]],
  ['CRC32c', 'CRC32c=43794720', [['crc32c', '43794720']]],
  ['UNIXcksum', 'UNIXcksum=4013623040', [['unixcksum', 'ef3b0700']]],
  ['UNIXsum 0 keeps its width', 'UNIXsum=0', [['unixsum', '0000']]],
  ['UNIXsum out of range: 8 octets (invalid-length)', 'UNIXsum=65536', [['unixsum', '0000000000010000']]],
  ['OWS around members and `=`', `  SHA-256 =\t${SHA256} ,\tMD5=Sd/dVLAcvNLSq16eXua5uQ==  `,
    [['sha-256', SHA256_HEX], ['md5', HELLO.md5[1]]]],
  ['missing padding', `SHA-256=${RK}`, [['sha-256', RK_HEX]]],
  ['duplicates: last wins', 'MD5=AQ==, md5=Ag==', [['md5', '02']]],
  ['field lines', [`SHA-256=${SHA256}`, 'MD5=AQ=='], [['sha-256', SHA256_HEX], ['md5', '01']]],
  ['wrong length is kept (verification reports it)', 'SHA-256=AQ==', [['sha-256', '01']]],
  ['unknown algorithm only', 'foo=bar', null],
  ['unknown algorithm skipped', `foo=bar, SHA-256=${SHA256}`, [['sha-256', SHA256_HEX]]],
  ['RFC 9530 key `adler` is not an RFC 3230 name', 'adler=03da0195', null],
  ['undefined', undefined, null],
  ['empty', '', null],
  ['no field lines', [], null],
  ['empty elements', ' , ,, ', null],
  ['no `=`', 'SHA-256', null],
  ['empty value', 'SHA-256=', null],
  ['base64url characters', 'SHA-256=AQ-_', null],
  ['Structured Field syntax', `sha-256=:${SHA256}:`, null],
  ['over-padding', `SHA-256=${RK}==`, null],
  ['padding with a wrong length', 'SHA-256=AAA==', null],
  ['length 4n+1', 'SHA-256=AAAAA', null],
  ['padding in the middle', 'SHA-256=AA==AA==', null],
  ['UNIXsum not decimal', 'UNIXsum=0x1f', null],
  ['UNIXsum with a fraction, even .0', 'UNIXsum=63350.0', null],
  ['UNIXcksum with a fraction, even .0', 'UNIXcksum=4013623040.0', null],
  ['a UNIXsum with a fraction leaves the others', 'UNIXsum=6405.0, MD5=AQ==', [['md5', '01']]],
  ['UNIXsum negative', 'UNIXsum=-1', null],
  ['UNIXsum with 16 digits', 'UNIXsum=1000000000000000', null],
  ['ADLER32 with 9 hex digits', 'ADLER32=003da0195', null],
  ['ADLER32 not hex', 'ADLER32=xyz', null],
  ['CRC32c empty', 'CRC32c=', null],
  ['non-ASCII', 'SHA-256=\u00e9\u00e9\u00e9\u00e9', null],
  ['one bad member leaves the others', `MD5=AQ-_, SHA-256=${SHA256}`, [['sha-256', SHA256_HEX]]]
]

test('parseLegacyDigest: table of header values', async (t) => {
  for (const [name, value, outcome] of LEGACY_TABLE) {
    t.same(hexEntries(parseLegacyDigest(value)), outcome, name)
  }
  t.equal(parseLegacyDigest(5 as unknown as string), null, 'not a string')
  t.same(hexEntries(parseLegacyDigest([{} as unknown as string, 'MD5=AQ=='])), [['md5', '01']], 'non-string field line')
})

test('parseLegacyDigest: limits', async (t) => {
  const many = parseLegacyDigest(Array.from({ length: 1100 }, (_, i) => i % 2 === 0 ? `X${i}=AQ==` : `MD5=${Buffer.from([i & 0xff]).toString('base64')}`).join(','))
  t.same(hexEntries(many), [['md5', (1099 & 0xff).toString(16)]], '1100 members')
  const big = Buffer.alloc(49152, 0xcd)
  t.ok(parseLegacyDigest(`SHA-256=${big.toString('base64')}`)?.get('sha-256')?.equals(big), '64 KiB value')
  const spaces = ' '.repeat(65536)
  t.same(hexEntries(parseLegacyDigest(`${spaces}MD5${spaces}=${spaces}AQ==${spaces}`)), [['md5', '01']], '64 KiB of OWS')
  t.equal(parseLegacyDigest(`SHA-256=${'A'.repeat(65536)}!`), null, '64 KiB of invalid base64')
})
