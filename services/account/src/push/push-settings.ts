/** Parsers of the ACCOUNT_VAPID_* and ACCOUNT_PUSH_SERVICE_HOSTS settings. */

export function parseVapidPrivateKey(raw: string): Buffer {
  const key = Buffer.from(raw, "base64url");
  if (key.length !== 32) throw new Error("must be the P-256 private scalar, base64url of 32 bytes");
  return key;
}

export function parseVapidSubject(raw: string): string {
  if (!/^mailto:.+@.+/.test(raw) && !raw.startsWith("https://"))
    throw new Error(`must be a mailto: or https: URL (RFC 8292 §2.1): ${raw}`);
  return raw;
}

/** Lowercased host names; `*.` before one allows its subdomains (not the name itself). */
export function parsePushServiceHosts(raw: string): string[] {
  const hosts = raw
    .split(",")
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host !== "");
  for (const host of hosts)
    if (!/^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(host)) throw new Error(`not a host name: ${host}`);
  return hosts;
}
