import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { selfSignedCertificate, type TlsCertificate } from "./tls-certificate.ts";

/** A certificate made for the run, the mesh environment that trusts it, and its removal. */
export interface HttpsPushPath {
  certificate: TlsCertificate;
  /** For the mesh's environment. */
  env: Record<string, string>;
  remove(): void;
}

/**
 * The push path as production runs it: a push service on https offering HTTP/2 (FCM's, Mozilla's and Apple's
 * do), with a certificate made for the run that account trusts through `NODE_EXTRA_CA_CERTS`, and https on
 * 127.0.0.1 allowed by the endpoint policy. Plain http, which the policy takes on loopback, is development's
 * path only, and costs a push more (an HTTP/1.1 request per push in flight instead of a stream on one
 * connection).
 */
export async function httpsPushPath(): Promise<HttpsPushPath> {
  const certificate = await selfSignedCertificate();
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-push-ca-"));
  const trusted = join(dir, "push-service.pem");
  writeFileSync(trusted, certificate.cert);
  return {
    certificate,
    env: { NODE_EXTRA_CA_CERTS: trusted, ACCOUNT_PUSH_SERVICE_HOSTS: "127.0.0.1" },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
