export type { AskInput, AskOptions, AskResult, InquireInput } from "./agents.ts";
export { Agents } from "./agents.ts";
export { canonicalJson } from "./canonical-json.ts";
export { type CreateLinkInput, defaultBaseUrl, Svc, type SvcOptions } from "./client.ts";
export type { Environment } from "./environment.ts";
export {
  AuthenticationError,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  RateLimitError,
  SvcError,
  type SvcErrorFields,
  TrustLayerError,
  type Violation,
} from "./errors.ts";
export { KeySet, type KeySetOptions } from "./key-set.ts";
export type { Body, OperationId, Query, Result } from "./operations.ts";
export type {
  SecuredAccount,
  SecuredAccountList,
  SecuredAccountsPage,
  SecuredAccountsQuery,
} from "./secured-accounts.ts";
export type { CallOptions, ResponseInfo, WithResponse } from "./transport.ts";
export {
  type AttestationCheck,
  type AttestationClaims,
  type AttestationRefusal,
  type AttestationVerification,
  cardDigest,
  type ProofClaims,
  type ProofRefusal,
  type ProofVerification,
  type ProposedCard,
  Verifier,
  type VerifierOptions,
} from "./verifier.ts";
export * from "./webhooks.ts";
