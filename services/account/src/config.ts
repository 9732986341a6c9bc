import { batchSizeSetting, developmentSecret, parse, retentionSetting, type Settings } from "@svc/platform";
import {
  parseCertificatePem,
  parseIacaTrustList,
  parseTrustList,
  type TrustedIaca,
  type TrustedIssuer,
} from "./age/wallet/trust-list.ts";
import { parsePushServiceHosts, parseVapidPrivateKey, parseVapidSubject } from "./push/push-settings.ts";

/**
 * The development verifier key's own certificate, fixed so that the development client_id is the same
 * at every start and on every replica (a new one per start would refuse answers to request objects
 * fetched before it). Made once with `issueCertificate` (role verifier, valid 2000-2100).
 */
const developmentVerifierCertificate = [
  "-----BEGIN CERTIFICATE-----",
  "MIIBYzCCAQmgAwIBAgIBATAKBggqhkjOPQQDAjAwMQswCQYDVQQGEwJVVDEhMB8G",
  "A1UEAwwYc3ZjIGRldmVsb3BtZW50IHZlcmlmaWVyMCAXDTAwMDEwMTAwMDAwMFoY",
  "DzIxMDAwMTAxMDAwMDAwWjAwMQswCQYDVQQGEwJVVDEhMB8GA1UEAwwYc3ZjIGRl",
  "dmVsb3BtZW50IHZlcmlmaWVyMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAElDfm",
  "vrWLWt45vk+4hv2nFovzKTE8N2Pfk8seUEi10+M0FQ6rCZ7N/UAAdYaYt3m4xq62",
  "2SD+2uhFCP97nvb4PKMSMBAwDgYDVR0PAQH/BAQDAgeAMAoGCCqGSM49BAMCA0gA",
  "MEUCIALNB40YE1iZyor5B2TEu63EdMa/rJ8opWgG73v5eDnxAiEA1XMYwtXw5ze0",
  "XOU0DTTOtUBwFScP7qYgcVq7qcjXvJA=",
  "-----END CERTIFICATE-----",
].join("\n");

/** ACCOUNT_<NAME> variables beside the shared ones; the README lists them with their defaults. */
export const settings = {
  // A production deployment needs its own sandbox key too: its partners' development environments have sandbox humans.
  sandboxKey: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("account development sandbox key!", "utf8"),
    description: "AES-256-GCM key sealing sandbox humans' passkey private keys, base64 of 32 bytes",
  }),
  refPepper: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("account development ref pepper!!", "utf8"),
    description: "HMAC-SHA256 key of partner user references at rest, base64 of 32 bytes",
  }),
  emailPepper: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("account development email pepper", "utf8"),
    description: "HMAC-SHA256 key of sign-in identities' verified e-mail addresses at rest, base64 of 32 bytes",
  }),
  devIssuer: {
    parse: parse.url,
    default: "http://127.0.0.1:8070",
    description: "issuer of sandbox humans' sign-in identities: the development identity provider (deploy/dev-idp)",
  },
  // On by default so a development mesh has credentials; production must say "off" (see server.ts).
  devWalletIssuerKey: developmentSecret<Buffer | null>({
    parse: (raw) => (raw === "off" ? null : parse.base64Key32(raw)),
    developmentDefault: Buffer.from("account dev wallet issuer key!!!", "utf8"),
    description:
      'private P-256 scalar of the development wallet issuer, base64 of 32 bytes, or "off" (production must be off)',
  }),
  verifierKey: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("account development verifier key", "utf8"),
    description: "private P-256 scalar signing OpenID4VP request objects, base64 of 32 bytes",
  }),
  // A certificate is public, but production must be given its own, as it must its own key.
  verifierCertificate: developmentSecret({
    parse: parseCertificatePem,
    developmentDefault: parseCertificatePem(developmentVerifierCertificate),
    description:
      "PEM X.509 certificate of ACCOUNT_VERIFIER_KEY's public key: the request object's x5c, whose SHA-256 is the client_id (x509_hash)",
  }),
  walletIssuers: {
    parse: parseTrustList,
    default: [] as TrustedIssuer[],
    description: 'issuers of age credentials trusted here: JSON [{"iss": "...", "jwks": {"keys": [...]}}]',
  },
  walletIacaRoots: {
    parse: parseIacaTrustList,
    default: [] as TrustedIaca[],
    description: 'IACA roots of mdoc issuers trusted here: JSON [{"issuer": "...", "certificates": ["<PEM>", ...]}]',
  },
  walletCredentialTypes: {
    parse: (raw: string) =>
      raw
        .split(",")
        .map((t) => t.trim())
        .filter((t) => t !== ""),
    default: ["urn:eudi:pid:1"],
    description: "SD-JWT VC types (vct) whose age claims are accepted, comma-separated",
  },
  retentionEvery: {
    parse: parse.duration,
    default: 10 * 60_000,
    description: "how often the retention runs, in every replica: a due row waits at most this long past its retention",
  },
  ceremonyRetention: retentionSetting(
    60 * 60_000,
    "how long a passkey ceremony is kept after it expired (until then a late finish is told it expired, not that it never was)",
  ),
  presentationRetention: retentionSetting(
    60 * 60_000,
    "how long an age presentation nobody keeps (never answered, or of a gate request nobody confirmed) is kept after it expired",
  ),
  retentionBatch: batchSizeSetting("rows one retention statement deletes at most"),
  rpName: {
    parse: parse.string,
    default: "svc",
    description: "relying-party name shown by the person's passkey manager at registration",
  },
  apnsTeamId: {
    parse: parse.string,
    default: "",
    description: "Apple developer team id; set with the other ACCOUNT_APNS_* to push to iOS devices (none by default)",
  },
  apnsKeyId: { parse: parse.string, default: "", description: "id of the APNs auth key (.p8)" },
  apnsPrivateKey: {
    parse: (raw: string) => raw.replaceAll("\\n", "\n"),
    default: "",
    description: "the APNs auth key, PKCS #8 PEM (line breaks may be written \\n)",
  },
  apnsTopic: { parse: parse.string, default: "", description: "the iOS app's bundle id (apns-topic)" },
  apnsOrigin: {
    parse: parse.url,
    default: "https://api.push.apple.com",
    description: "APNs endpoint: https://api.sandbox.push.apple.com for development builds of the app",
  },
  pushKey: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("account development web push key", "utf8"),
    description:
      "key sealing web push subscriptions (endpoint and keys) and the development VAPID key at rest, base64 of 32 bytes",
  }),
  // Empty in development: the pair is then made once and kept sealed in the database (src/push/vapid-keys.ts).
  vapidPrivateKey: developmentSecret<Buffer | null>({
    parse: parseVapidPrivateKey,
    developmentDefault: null,
    description: "the VAPID (RFC 8292) private key: the P-256 private scalar, base64url of 32 bytes",
  }),
  vapidSubject: {
    parse: parseVapidSubject,
    default: "mailto:push@svc.invalid",
    description: "the VAPID `sub` claim: a mailto: or https: contact the push services can reach the operator at",
  },
  pushServiceHosts: {
    parse: parsePushServiceHosts,
    default: parsePushServiceHosts(
      "fcm.googleapis.com,updates.push.services.mozilla.com,web.push.apple.com,*.push.apple.com,*.notify.windows.com",
    ),
    description:
      "hosts a web push endpoint may name (https only), comma-separated; *.example.com allows its subdomains",
  },
  pushPollEvery: {
    parse: parse.duration,
    default: 1000,
    description: "how often the web push sender looks for due pushes besides being woken by a commit",
  },
  fcmServiceAccount: {
    parse: parse.string,
    default: "",
    description:
      "Google service-account key file (JSON) of the Firebase project, to push to Android and web devices (none by default)",
  },
} satisfies Settings;

/** The keys the routes seal and hash with, from the settings above. */
export interface AccountSecrets {
  sandboxKey: Buffer;
  refPepper: Buffer;
  emailPepper: Buffer;
}
