import { isIP } from "node:net";
import { invalidArgument } from "../refusal.ts";

/**
 * Where a web push may go (decisions.md "Push endpoints in development"). Like the webhook destination
 * guard it keeps our pushes off our own network, but a push service is one of a few known hosts, so the
 * rule is a list: https on a configured push-service host. Development also takes plain http on a
 * loopback address, for a local receiver. Checked when a subscription is registered and again before
 * each send, so a narrowed list stops pushes to subscriptions registered before.
 */
export interface PushEndpointPolicy {
  deployment: "development" | "production";
  /** Lowercased; `*.example.com` allows its subdomains. */
  hosts: readonly string[];
}

const maxEndpointLength = 2048;

const isLoopback = (hostname: string) => {
  const bare = hostname.replace(/^\[|\]$/g, "");
  if (bare === "localhost") return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  return bare === "::1";
};

const onListedHost = (hostname: string, hosts: readonly string[]) =>
  hosts.some((host) => (host.startsWith("*.") ? hostname.endsWith(host.slice(1)) : hostname === host));

/** The endpoint as a URL, or an InvalidArgument naming `endpoint` and why. */
export function checkPushEndpoint(endpoint: string, policy: PushEndpointPolicy): URL {
  if (endpoint === "" || endpoint.length > maxEndpointLength)
    throw invalidArgument(`endpoint must be a URL of 1 to ${maxEndpointLength} characters`);
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw invalidArgument("endpoint is not a URL");
  }
  if (url.username !== "" || url.password !== "") throw invalidArgument("endpoint must not carry credentials");
  const host = url.hostname.toLowerCase();
  if (url.protocol === "https:" && onListedHost(host, policy.hosts)) return url;
  if (url.protocol === "http:" && policy.deployment === "development" && isLoopback(host)) return url;
  throw invalidArgument(
    policy.deployment === "development"
      ? `endpoint must be https on a known push service (${policy.hosts.join(", ")}) or http on a loopback address`
      : `endpoint must be https on a known push service (${policy.hosts.join(", ")})`,
  );
}
