import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/**
 * A person, known only by svc_user_id: no name or phone number is ever stored, and an e-mail address
 * only as a keyed hash on a sign-in identity.
 */
export const Human = defineEntity({
  name: "Human",
  tableName: "human",
  properties: {
    id: p.uuid().primary(),
    createdAt: p.datetime(),
    /** Set only for sandbox humans, which exist only in the development environment. */
    sandboxBehavior: p.enum(["confirm", "decline", "silent"] as const).nullable(),
    sandboxEnvironment: p.enum(["development"] as const).nullable(),
  },
});
export type Human = InferEntity<typeof Human>;

/**
 * The OpenID Connect identity (issuer and subject) a human signs in with, and the e-mail address its
 * provider last vouched for, only as a keyed hash (see sign-in-emails.ts).
 */
export const SignInIdentity = defineEntity({
  name: "SignInIdentity",
  tableName: "sign_in_identity",
  properties: {
    issuer: p.text().primary(),
    subject: p.text().primary(),
    svcUserId: p.uuid(),
    createdAt: p.datetime(),
    emailHash: p.blob().nullable(),
    emailVerifiedAt: p.datetime().nullable(),
  },
});
export type SignInIdentity = InferEntity<typeof SignInIdentity>;
