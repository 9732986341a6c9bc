/** The person's phone in tests: the software authenticator the account service signs sandbox confirmations with. */
export {
  AuthenticatorRefusal,
  SoftwareAuthenticator,
  type SoftwarePasskeyState,
} from "../../services/account/src/sandbox/software-authenticator.ts";
