import { defineEntity, p } from "@mikro-orm/postgresql";

/** One ES256 key of the ring. The private half is stored only sealed under the KEK. */
export const SigningKey = defineEntity({
  name: "SigningKey",
  tableName: "signing_key",
  properties: {
    /** RFC 7638 thumbprint of the public key. */
    kid: p.string().primary(),
    x: p.string(),
    y: p.string(),
    sealedPrivateKey: p.blob(),
    kekId: p.string(),
    publishedAt: p.datetime(),
    signsFrom: p.datetime(),
    retiredAt: p.datetime().nullable(),
    unpublishAt: p.datetime().nullable(),
  },
});
