import { isIPv4, isIPv6 } from 'node:net'

/**
 * The key an address is limited by: an IPv4 address as it is; an IPv4-mapped IPv6 one as its
 * IPv4; another IPv6 address by its /64, the block one subscriber holds, in one spelling
 * (`2001:db8:0:1::/64`). Anything else (a forwarded value that is no address, behind
 * TRUST_PROXY) shares one key, rather than make a bucket per string.
 */
export function addressKey (address: string): string {
  if (isIPv4(address)) return address
  if (!isIPv6(address)) return 'not-an-address'
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped !== null) return mapped[1]!
  const [head, tail] = address.toLowerCase().split('::') as [string, string | undefined]
  const groups = (part: string | undefined) => part === undefined || part === '' ? [] : part.split(':')
  const left = groups(head)
  const right = groups(tail)
  // A trailing dotted IPv4 (64:ff9b::1.2.3.4) stands for two groups.
  const size = (part: string[]) => part.reduce((n, group) => n + (group.includes('.') ? 2 : 1), 0)
  const all = tail === undefined ? left : [...left, ...Array<string>(8 - size(left) - size(right)).fill('0'), ...right]
  return `${all.slice(0, 4).map(group => parseInt(group, 16).toString(16)).join(':')}::/64`
}
