import { isIPv6 } from "node:net";

/**
 * The client's IP address, for the per-IP buckets. Behind `trustedProxyHops` reverse proxies (an
 * ingress, a load balancer) the socket's peer is the nearest proxy, and each proxy appended the address
 * it saw to `X-Forwarded-For`; the entry that many places from the right is the one the outermost
 * trusted proxy saw. With no trusted proxy the header is ignored: anyone can write it.
 */
export function clientAddress(
  remoteAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustedProxyHops: number,
): string {
  const peer = normalize(remoteAddress ?? "unknown");
  if (trustedProxyHops === 0 || forwardedFor === undefined) return peer;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor)
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const hop = hops[Math.max(0, hops.length - trustedProxyHops)];
  if (hop === undefined) return peer;
  const claimed = normalize(hop);
  return ipText.test(claimed) ? claimed : peer;
}

/** What an IPv4 or IPv6 address can look like; anything else in the header is not an address. */
const ipText = /^[0-9a-f:.]{2,45}$/;

/** An IPv4 client reached over an IPv6 socket (`::ffff:a.b.c.d`, or the same in hex) is the same client. */
const normalize = (address: string): string =>
  address
    .toLowerCase()
    .replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, "$1")
    .replace(/^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/, (_, high: string, low: string) =>
      [parseInt(high, 16) >> 8, parseInt(high, 16) & 255, parseInt(low, 16) >> 8, parseInt(low, 16) & 255].join("."),
    );

/**
 * Whom a per-IP bucket counts: an IPv4 address as itself, an IPv6 address as its /64. One subscriber (a
 * home, a phone, a server) is handed a whole /64 and picks addresses in it freely, so counting each address
 * alone would let one client multiply its limit by 2^64. `2001:db8:1:2::7` counts as `2001:db8:1:2::/64`.
 */
export function rateLimitedAddress(address: string): string {
  const [plain = ""] = address.split("%");
  if (!isIPv6(plain)) return address;
  // Each group of the full eight; a trailing dotted IPv4 part is two groups, never among the first four.
  const part = (text: string | undefined) =>
    text === undefined || text === ""
      ? []
      : text.split(":").flatMap((group) => (group.includes(".") ? ["0", "0"] : [group]));
  const [head, tail] = plain.split("::");
  const left = part(head);
  const right = part(tail);
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(":")}::/64`;
}
