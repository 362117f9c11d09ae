// The SSRF guard of webhook deliveries. An endpoint may only be reached on a public unicast
// address (ipaddr.js classifies them: loopback, private, link-local, carrier-grade NAT,
// unique-local, multicast, reserved, and IPv6 forms that embed an IPv4 address are all
// refused; cloud metadata addresses fall in those ranges), unless the address is in one of
// WEBHOOK_ALLOWED_NETWORKS. Names are resolved by an injectable resolver, every address is
// checked, and the connection is made to the addresses checked (the lookup hook of the
// socket), so DNS cannot answer one thing to the check and another to the connection.
import { Resolver as DnsResolver } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { withTimeout } from '../shared/time-limit.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * Names resolved by DNS queries (c-ares, on the event loop), never by `dns.lookup`: that one is
 * getaddrinfo on libuv's four-thread pool, so a tenant's hostname whose name servers never
 * answer would hold every thread, and stall the database's and Redis's connects (and file
 * reads, and crypto) for every tenant. Each resolution gives up after `timeoutMs` in all.
 * `servers`: the name servers to ask (default: the system's, from /etc/resolv.conf). /etc/hosts
 * is not read; `localhost` is loopback (RFC 6761).
 */
export function dnsResolver(opts: { timeoutMs: number; servers?: readonly string[] }): Resolver {
  // Two tries, each a third of the budget (c-ares doubles the wait on its second round).
  const dns = new DnsResolver({ timeout: Math.max(50, Math.floor(opts.timeoutMs / 3)), tries: 2 });
  if (opts.servers?.length) dns.setServers([...opts.servers]);
  return async (hostname) => {
    if (hostname === 'localhost' || hostname.endsWith('.localhost'))
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
    // Each family on its own within the limit: a name whose AAAA queries are dropped (some
    // middleboxes do) still resolves by its A records, and the other way round.
    const within = <T>(query: Promise<T>) => withTimeout(query, opts.timeoutMs, `DNS for ${hostname}`);
    const [v4, v6] = await Promise.allSettled([within(dns.resolve4(hostname)), within(dns.resolve6(hostname))]);
    const found = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (!found.length) {
      const why = v4.status === 'rejected' ? (v4.reason as Error & { code?: string }) : undefined;
      throw new Error(why?.code ? `${hostname} has no address (${why.code})` : (why?.message ?? `${hostname} has no A or AAAA record`));
    }
    return found;
  };
}

export class RefusedAddressError extends Error {
  override readonly name = 'RefusedAddressError';
  /**
   * @param publicReason what may be told to the client that registers the endpoint: never an
   * address a name resolved to (that would map private networks for anyone) nor a DNS error's text.
   */
  constructor(
    message: string,
    readonly publicReason: string,
  ) {
    super(message);
  }
}

/**
 * Cloud platforms' own services, refused whatever WEBHOOK_ALLOWED_NETWORKS says: Azure's
 * WireServer and IMDS gateway 168.63.129.16 (a public unicast address), Alibaba's metadata
 * 100.100.100.200, Oracle's legacy 192.0.0.192, AWS's IPv6 metadata fd00:ec2::254, and every
 * link-local address (169.254.169.254 and the ECS/EKS agents among them).
 */
const PLATFORM_NETWORKS = ['168.63.129.16/32', '100.100.100.200/32', '192.0.0.192/32', '169.254.0.0/16', 'fd00:ec2::254/128', 'fe80::/10'];

export interface AddressPolicy {
  /** Why `address` may not be reached, or undefined when it may. */
  refusal(address: string): string | undefined;
}

export function createAddressPolicy(allowedNetworks: readonly string[]): AddressPolicy {
  const allowed = allowedNetworks.map((cidr) => ipaddr.parseCIDR(cidr));
  const platform = PLATFORM_NETWORKS.map((cidr) => ipaddr.parseCIDR(cidr));
  const within = (ip: ipaddr.IPv4 | ipaddr.IPv6, nets: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>) =>
    nets.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
  return {
    refusal(address) {
      if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
      let ip = ipaddr.parse(address);
      if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
      if (within(ip, platform)) return `${address} is a cloud platform's service address`;
      if (within(ip, allowed)) return undefined;
      const range = ip.range();
      return range === 'unicast' ? undefined : `${address} is a ${range} address`;
    },
  };
}

/** The host of a URL as the resolver and the policy take it (IPv6 literals without brackets). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** Resolves `host` and checks every address; throws RefusedAddressError naming the first refused one. */
export async function checkHost(host: string, resolver: Resolver, policy: AddressPolicy): Promise<ResolvedAddress[]> {
  let addresses: ResolvedAddress[];
  const literal = isIP(host) !== 0;
  if (literal) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await resolver(host);
    } catch (err) {
      throw new RefusedAddressError(`${host} does not resolve (${(err as Error).message})`, `${host} does not resolve`);
    }
  }
  if (!addresses.length) throw new RefusedAddressError(`${host} does not resolve`, `${host} does not resolve`);
  for (const { address } of addresses) {
    const why = policy.refusal(address);
    // A literal address is the client's own; what a name resolves to is not told.
    if (why)
      throw new RefusedAddressError(`${host} resolves to a refused address: ${why}`, literal ? why : `${host} resolves to an address that is not public`);
  }
  return addresses;
}

/** A socket `lookup` that resolves through `resolver` and refuses the connection unless every address passes. */
export function guardedLookup(resolver: Resolver, policy: AddressPolicy): LookupFunction {
  return (hostname: string, options: { all?: boolean }, callback: (err: Error | null, address: string | ResolvedAddress[], family?: number) => void) => {
    checkHost(hostname, resolver, policy).then(
      (addresses) => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]?.address ?? '', addresses[0]?.family);
      },
      (err: Error) => callback(err, ''),
    );
  };
}
