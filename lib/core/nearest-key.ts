// "Did you mean …?" for option keys: the valid key nearest to a mistyped one
// by edit distance. Pure: no fastify here.

/**
 * The optimal string alignment distance between `a` and `b`: the fewest
 * insertions, deletions, substitutions and swaps of two adjacent characters
 * (each costs 1) that turn one into the other, no substring edited twice.
 * Swaps count because they are a usual typo (`verfiy`).
 */
export function editDistance (a: string, b: string): number {
  // Three rows of the (a.length + 1) × (b.length + 1) table: i - 2, i - 1, i.
  let before: number[] = []
  let previous: number[] = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1)
      let best = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, substitution)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (before[j - 2] as number) + 1)
      }
      row.push(best)
    }
    before = previous
    previous = row
  }
  return previous[b.length] as number
}

/**
 * The candidate nearest to `key`, ignoring case (`contentdigest` →
 * `contentDigest`), or undefined when none is near enough to be a typo of it:
 * at most a third of the longer string's length is edited, and at least one
 * edit is allowed. Ties go to the earlier candidate.
 */
export function nearestKey (key: string, candidates: Iterable<string>): string | undefined {
  const lower = key.toLowerCase()
  let nearest: string | undefined
  let nearestDistance = Infinity
  for (const candidate of candidates) {
    const distance = editDistance(lower, candidate.toLowerCase())
    const limit = Math.max(1, Math.floor(Math.max(key.length, candidate.length) / 3))
    if (distance <= limit && distance < nearestDistance) {
      nearest = candidate
      nearestDistance = distance
    }
  }
  return nearest
}
