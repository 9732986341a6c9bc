import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";

/**
 * Where a webhook may go. In production only https to public addresses, so a partner cannot point
 * an endpoint at our own network (loopback, private ranges, cloud metadata). The check runs when
 * the connection is made, on the very addresses the socket then connects to: a name that resolved
 * to a public address when the endpoint was added and to 127.0.0.1 now (DNS rebinding) is refused.
 * Development allows plain http and any address, so a local receiver works.
 */
export interface DestinationPolicy {
  requireHttps: boolean;
  publicAddressesOnly: boolean;
}

export const destinationPolicyFor = (deployment: "development" | "production"): DestinationPolicy =>
  deployment === "production"
    ? { requireHttps: true, publicAddressesOnly: true }
    : { requireHttps: false, publicAddressesOnly: false };

class DestinationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DestinationRefused";
  }
}

type Range = [address: string, prefix: number];

/** IANA special-purpose ranges, most specific name first; an address in none of them is public. */
const ipv4Ranges: [name: string, ranges: Range[]][] = [
  [
    "cloud metadata",
    [
      ["169.254.169.254", 32],
      ["100.100.100.200", 32],
    ],
  ],
  ["unspecified", [["0.0.0.0", 8]]],
  ["loopback", [["127.0.0.0", 8]]],
  [
    "private",
    [
      ["10.0.0.0", 8],
      ["172.16.0.0", 12],
      ["192.168.0.0", 16],
    ],
  ],
  ["shared address space (CGNAT)", [["100.64.0.0", 10]]],
  ["link-local", [["169.254.0.0", 16]]],
  ["IETF protocol assignments", [["192.0.0.0", 24]]],
  [
    "documentation",
    [
      ["192.0.2.0", 24],
      ["198.51.100.0", 24],
      ["203.0.113.0", 24],
    ],
  ],
  ["benchmarking", [["198.18.0.0", 15]]],
  ["multicast", [["224.0.0.0", 4]]],
  ["reserved", [["240.0.0.0", 4]]],
];

const ipv6Ranges: [name: string, ranges: Range[]][] = [
  ["cloud metadata", [["fd00:ec2::254", 128]]],
  ["unspecified", [["::", 128]]],
  ["loopback", [["::1", 128]]],
  ["IPv4-compatible (deprecated)", [["::", 96]]],
  ["unique local (private)", [["fc00::", 7]]],
  ["link-local", [["fe80::", 10]]],
  ["site-local (deprecated)", [["fec0::", 10]]],
  ["multicast", [["ff00::", 8]]],
  ["discard-only", [["100::", 64]]],
  ["documentation", [["2001:db8::", 32]]],
  ["Teredo", [["2001::", 32]]],
  ["local-use NAT64", [["64:ff9b:1::", 48]]],
];

/** The IPv4 address carried inside NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses reaches the same hosts. */
const embeddedIpv4Ranges = (ranges: Range[]): Range[] =>
  ranges.flatMap(([address, prefix]) => {
    const [a, b, c, d] = address.split(".").map(Number) as [number, number, number, number];
    const high = ((a << 8) | b).toString(16);
    const low = ((c << 8) | d).toString(16);
    return [
      [`64:ff9b::${high}:${low}`, 96 + prefix],
      [`2002:${high}:${low}::`, 16 + prefix],
    ] satisfies Range[];
  });

const classifiers: [name: string, list: BlockList][] = [
  ...ipv4Ranges.map(([name, ranges]): [string, BlockList] => {
    const list = new BlockList();
    // BlockList applies IPv4 rules to IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) as well.
    for (const [address, prefix] of ranges) list.addSubnet(address, prefix, "ipv4");
    for (const [address, prefix] of embeddedIpv4Ranges(ranges)) list.addSubnet(address, prefix, "ipv6");
    return [name, list];
  }),
  ...ipv6Ranges.map(([name, ranges]): [string, BlockList] => {
    const list = new BlockList();
    for (const [address, prefix] of ranges) list.addSubnet(address, prefix, "ipv6");
    return [name, list];
  }),
];

/** The special-purpose range an IP address lies in, or undefined for a public address. */
export function specialPurposeRange(address: string): string | undefined {
  const version = isIP(address);
  if (version === 0) throw new Error(`not an IP address: ${address}`);
  const type = version === 4 ? "ipv4" : "ipv6";
  return classifiers.find(([, list]) => list.check(address, type))?.[0];
}

/** URL hostnames keep IPv6 literals in brackets. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, "$1");

/** What can be decided from the URL alone; undefined when the URL may be tried. */
export function refusalForUrl(url: URL, policy: DestinationPolicy): string | undefined {
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return `only http and https URLs are delivered to, not ${url.protocol}`;
  if (policy.requireHttps && url.protocol !== "https:") return "production delivers only to https URLs";
  const host = hostOf(url);
  if (policy.publicAddressesOnly && isIP(host) !== 0) return refusalForAddress(host);
  return undefined;
}

function refusalForAddress(address: string, name?: string): string | undefined {
  const range = specialPurposeRange(address);
  if (!range) return undefined;
  return `${name ? `${name} resolves to ${address}, which` : address} is not a public address (${range})`;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request: resolves the name, refuses it when any address it resolves to is not
 * public, and hands the socket exactly the addresses it checked, so nothing resolves the name twice.
 */
export function guardedLookup(policy: DestinationPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { family: options.family ?? 0, hints: options.hints, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      if (policy.publicAddressesOnly) {
        for (const { address } of addresses) {
          const refusal = refusalForAddress(address, hostname);
          if (refusal)
            return callback(Object.assign(new DestinationRefused(refusal), { code: "EDESTINATIONREFUSED" }), []);
        }
      }
      if (addresses.length === 0)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), []);
      if (options.all) return callback(null, addresses);
      const [first] = addresses as [LookupAddress];
      callback(null, first.address, first.family);
    });
  };
}
