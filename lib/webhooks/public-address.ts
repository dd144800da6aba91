import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { lookup as lookupAll } from 'node:dns/promises'
import type { LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * The range of an address a webhook may not reach: loopback, private, link-local (the cloud
 * metadata address 169.254.169.254 among them), unique-local, carrier-grade NAT, multicast,
 * reserved, unspecified; an IPv4 address written as IPv6 (mapped or compatible) by its IPv4
 * range. None: a public (unicast) address.
 */
export function forbiddenRange (address: string): string | undefined {
  // process() takes an IPv4 address written as IPv6 (::ffff:a.b.c.d) as IPv4, but not one
  // IPv4-compatible in hex (::7f00:1, as URLs normalise ::127.0.0.1), which it calls unicast.
  const parsed = ipaddr.process(address)
  const range = parsed.range()
  if (range !== 'unicast') return range
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every(part => part === 0)) return 'ipv4Compatible'
  return undefined
}

/** A webhook's address that is not public, and WEBHOOK_ALLOW_PRIVATE is off. */
export class ForbiddenAddress extends Error {
  readonly host: string
  readonly address: string
  readonly range: string
  constructor (host: string, address: string, range: string) {
    super(`${host} resolves to ${address}, ${/^[aeiou]/i.test(range) ? 'an' : 'a'} ${range} address, which webhooks may not reach (WEBHOOK_ALLOW_PRIVATE)`)
    this.host = host
    this.address = address
    this.range = range
  }
}

/** The URL's host as DNS takes it: without an IPv6 literal's brackets. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1')

/**
 * Why a webhook may not be sent to `url`; none if it may: it must be http or https without
 * credentials, and (unless `allowPrivate`) its host must resolve to public addresses only. A
 * host that does not resolve yet passes: each delivery resolves it again, and logs why it failed.
 */
export async function urlProblem (url: URL, allowPrivate: boolean): Promise<string | undefined> {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https URL'
  if (url.username !== '' || url.password !== '') return 'must hold no credentials: the signature authenticates each delivery'
  if (allowPrivate) return undefined
  const host = hostOf(url)
  let addresses: LookupAddress[]
  try {
    addresses = await lookupAll(host, { all: true })
  } catch {
    return undefined
  }
  for (const { address } of addresses) {
    const range = forbiddenRange(address)
    if (range !== undefined) return new ForbiddenAddress(host, address, range).message
  }
  return undefined
}

/**
 * A `lookup` for node:http that refuses a host resolving to an address that is not public:
 * the connection goes to the address checked, so a name that resolves otherwise a moment
 * later (DNS rebinding) gains nothing.
 */
export const publicLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options as LookupOptions, all: true }, (error, addresses) => {
    if (error) {
      callback(error, '', 0)
      return
    }
    for (const { address } of addresses) {
      const range = forbiddenRange(address)
      if (range !== undefined) {
        callback(new ForbiddenAddress(hostname, address, range), '', 0)
        return
      }
    }
    if ((options as LookupOptions).all === true) (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses)
    else callback(null, addresses[0]!.address, addresses[0]!.family)
  })
}
