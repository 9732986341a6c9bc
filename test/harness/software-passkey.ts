/**
 * The person's phone in tests: the software authenticator the account service signs sandbox
 * confirmations with, taken from the account package's declared export, not from its source tree.
 */
export { SoftwareAuthenticator } from "@svc/account/software-authenticator";
