// Who a request comes from, for the limits of the unauthenticated endpoints. An IPv4 address is
// one client. An IPv6 address is not: a single subscriber is routinely given a whole /64 (2^64
// addresses), so a limit per IPv6 address limits nothing; the /64 is what one client holds.
import ipaddr from 'ipaddr.js';

export interface ClientAddress {
  /** The address itself (an IPv4-mapped IPv6 address as the IPv4 it maps). */
  address: string;
  /** The network one client holds: the IPv4 address itself, or the IPv6 /64 (`2001:db8:1:2::/64`). */
  network: string;
}

/** The address without a port or brackets some proxies write (`203.0.113.7:51234`, `[2001:db8::1]:443`). */
function hostOf(ip: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(ip);
  if (bracketed) return bracketed[1] as string;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(ip);
  return v4WithPort ? (v4WithPort[1] as string) : ip;
}

export function clientAddress(ip: string): ClientAddress {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(hostOf(ip));
  } catch {
    // Not an address (a socket without one, an odd proxy header): limited as itself.
    return { address: ip, network: ip };
  }
  if (parsed.kind() === 'ipv4') {
    const v4 = parsed.toString();
    return { address: v4, network: v4 };
  }
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  const network = new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString();
  return { address: parsed.toNormalizedString(), network: `${network}/64` };
}
