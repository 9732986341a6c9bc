/** The person's phone in tests: the software authenticator the account service signs sandbox confirmations with. */
export { SoftwareAuthenticator } from "../../services/account/src/sandbox/software-authenticator.ts";
