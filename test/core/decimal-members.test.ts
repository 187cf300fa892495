// decimalMembers() (lib/core/fields.ts): which Dictionary members are Decimals (RFC 8941 §3.3.2),
// checked on a table and on generated Dictionaries whose member types are
// known, next to what structured-headers makes of the same text.
import { test } from 'tap'
import fc from 'fast-check'
import { parseDictionary } from 'structured-headers'
import { decimalMembers } from '../../lib/core/fields'

const TABLE: Array<[string, string, string[]]> = [
  ['no dot: fast path', 'a=1, b=2', []],
  ['integral Decimal', 'sha-512=10.0', ['sha-512']],
  ['negative Decimal', 'a=-0.5', ['a']],
  ['Decimal among Integers', 'sha-256=1, sha-512=10.0, md5=3', ['sha-512']],
  ['leading SP and OWS around commas', '  a=1.0 ,\tb=2\t, c=3.5', ['a', 'c']],
  ['dot in a key', 'a.b=1, c.d.e', []],
  ['dot in a Token', 'a=tok.en, b=x.1', []],
  ['Token made of `*`, `/` and `:`', 'a=*/x:1.0', []],
  ['dot, comma and escaped quote in a String', 'a="1.0, b=2.0 \\" c=3.0", d=4.0', ['d']],
  ['escaped backslash ends before the quote', 'a="x\\\\", b=1.5', ['b']],
  ['dot in a Display String', 'a=%"1.0%22 b=2.0", c=1', []],
  ['Byte Sequence', 'a=:AQ==:, b=:Ag==:;c=1.0', []],
  ['Boolean and bare key', 'a=?1;b=1.0, c, d;e=2.0', []],
  ['Date (last: structured-headers takes nothing after one)', 'a=1.5, b=@1659578233', ['a']],
  ['Decimal parameter on an Integer', 'a=1;q=0.5;r="2.0";s', []],
  ['parameter with SP after `;`', 'a=1; q=0.5, b=2.0', ['b']],
  ['Inner List of Decimals', 'a=(1.0 2.0);p=3.0, b=(), c=( 1 "x.0" :AA==: )', []],
  ['Decimal after an Inner List', 'a=(1 2), b=3.0', ['b']],
  ['duplicate: the last value counts', 'a=1.0, a=1', []],
  ['duplicate: a later Decimal counts', 'a=1, a=1.0', ['a']]
]

test('decimalMembers: table', async (t) => {
  for (const [name, text, decimals] of TABLE) {
    t.doesNotThrow(() => parseDictionary(text), `${name}: a Dictionary`)
    t.same([...decimalMembers(text)].sort(), decimals, name)
  }
})

test('decimalMembers ends on text that is not a Dictionary', async (t) => {
  for (const text of ['a="1.0', 'a=%"1.0', 'a=:1.0', 'a=(1.0', 'a=(,1.0)', 'a=(1.0 ;', '.', 'a=1.0 b=2.0', 'a=1.0;;;', ',,1.0']) {
    t.type(decimalMembers(text), Set, JSON.stringify(text))
  }
  t.same([...decimalMembers('a=1.0 b=2.0')], ['a'], 'stops where the Dictionary stops')
})

// ---------------------------------------------------------------------------
// Generated Dictionaries: each member's type is known by construction.

interface Member { key: string, decimal: boolean, text: string }

const key = fc.constantFrom('a', 'b', 'sha-256', 'a.0', 'x_1', '*k')
const digits = (min: number, max: number): fc.Arbitrary<string> => fc.integer({ min, max }).map(String)
const integer = fc.tuple(fc.boolean(), digits(0, 999_999_999_999_999)).map(([neg, d]) => `${neg ? '-' : ''}${d}`)
const decimal = fc.tuple(fc.boolean(), digits(0, 999_999_999_999), fc.integer({ min: 1, max: 3 }), digits(0, 999))
  .map(([neg, i, n, f]) => `${neg ? '-' : ''}${i}.${f.padStart(n, '0').slice(-n)}`)
const printable = fc.string({ unit: fc.constantFrom(...'a.0,;=()" \\:%*-'), maxLength: 12 })
const string = printable.map((s) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`)
const displayString = printable.map((s) => `%"${s.replace(/[%"]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)}"`)
const token = fc.stringMatching(/^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]{0,10}$/)
const bytes = fc.uint8Array({ maxLength: 8 }).map((b) => `:${Buffer.from(b).toString('base64')}:`)
const other = fc.oneof(string, displayString, token, bytes, fc.constantFrom('?0', '?1'))
const anyItem = fc.oneof(integer, decimal, other)
const parameters = fc.array(fc.tuple(key, fc.option(anyItem, { nil: undefined }), fc.constantFrom('', ' ')), { maxLength: 3 })
  .map((ps) => ps.map(([k, v, sp]) => v === undefined ? `;${sp}${k}` : `;${sp}${k}=${v}`).join(''))
const innerList = fc.tuple(fc.array(fc.tuple(anyItem, parameters), { maxLength: 3 }), fc.constantFrom('', ' '))
  .map(([items, sp]) => `(${sp}${items.map(([i, p]) => i + p).join(' ')}${sp})`)
const member: fc.Arbitrary<Member> = fc.tuple(
  key,
  fc.oneof(
    decimal.map((v) => ({ decimal: true, value: `=${v}` })),
    fc.oneof(integer, other, innerList).map((v) => ({ decimal: false, value: `=${v}` })),
    fc.constant({ decimal: false, value: '' })
  ),
  parameters
).map(([k, { decimal, value }, p]) => ({ key: k, decimal, text: `${k}${value}${p}` }))
const ows = fc.constantFrom('', ' ', '\t', ' \t ')
const dictionary = fc.array(fc.tuple(member, ows, ows), { minLength: 1, maxLength: 8 })

test('decimalMembers: generated Dictionaries, last value per key, as structured-headers sees them', async (t) => {
  let decimalsSeen = 0
  fc.assert(fc.property(dictionary, (members) => {
    const text = members.map(([m, a, b]) => `${a}${m.text}${b}`).join(',').trim()
    const expected = new Map<string, boolean>()
    for (const [m] of members) expected.set(m.key, m.decimal)
    const want = [...expected].filter(([, d]) => d).map(([k]) => k).sort()
    const got = [...decimalMembers(text)].sort()
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${text}: ${got.join(',')} instead of ${want.join(',')}`)
    // The text is a Dictionary, and structured-headers gives a number for every Decimal found.
    const parsed = parseDictionary(text)
    for (const k of got) {
      if (typeof parsed.get(k)?.[0] !== 'number') throw new Error(`${text}: ${k} is not a number to structured-headers`)
    }
    decimalsSeen += got.length
  }), { seed: 9530, numRuns: 1000 })
  t.ok(decimalsSeen > 100, `${decimalsSeen} Decimals found`)
})
