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

/** An IPv4 client reached over an IPv6 socket is the same client. */
const normalize = (address: string): string => address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, "$1").toLowerCase();
