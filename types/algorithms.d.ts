// The one list of digest algorithm keys, shared by the plugin's types
// (index.d.ts) and the client's (client.d.ts). Its own file, importing
// nothing, so that the client's types do not load fastify's.

/** The keys of the IANA "Hash Algorithms for HTTP Digest Fields" registry (RFC 9530 §5). */
export type DigestAlgorithm =
  | 'sha-256'
  | 'sha-512'
  | 'md5'
  | 'sha'
  | 'unixsum'
  | 'unixcksum'
  | 'adler'
  | 'crc32c'
