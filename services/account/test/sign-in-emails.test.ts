import { Code } from "@connectrpc/connect";
import { ManualClock, uuid } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refusal, startTestAccount, type TestAccount } from "./support/account.ts";

/**
 * A sign-in identity's verified e-mail address (decisions.md "`user_email` on inquire") at the account
 * service: kept from the ID token's claims at each sign-in, found again in any letter case.
 */
const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;

beforeAll(async () => {
  account = await startTestAccount("account_sign_in_emails", { clock });
});
afterAll(() => account?.stop());

const address = () => `person.${uuid().slice(0, 8)}@mail.example`;
const signIn = (subject: string, claims: { email?: string; emailVerified?: boolean } = {}) =>
  account.client.resolveSignedInHuman({ issuer: "https://id.example", subject, emailVerified: false, ...claims });
const find = (email: string) => account.client.findHumanByEmail({ email });

describe("a sign-in identity's verified e-mail address", () => {
  it("is set by concurrent first sign-ins of one identity once, for the one human they make", async () => {
    const email = address();
    const subject = uuid();
    const results = await Promise.all(Array.from({ length: 6 }, () => signIn(subject, { email, emailVerified: true })));
    const humans = new Set(results.map((r) => r.svcUserId));
    expect(humans.size).toBe(1);
    expect((await find(email.toUpperCase())).svcUserId).toBe([...humans][0]);
  });

  it("belongs to the identity that came to hold it last when two hold it", async () => {
    const email = address();
    const firstSubject = uuid();
    await signIn(firstSubject, { email, emailVerified: true });
    clock.advance(1000);
    const second = await signIn(uuid(), { email: email.toUpperCase(), emailVerified: true });
    expect((await find(email)).svcUserId).toBe(second.svcUserId);
    // The first signing in again with it changes nothing: it has held the address all along.
    clock.advance(1000);
    await signIn(firstSubject, { email, emailVerified: true });
    expect((await find(email)).svcUserId).toBe(second.svcUserId);
  });

  it("is not found when unknown, never verified, overlong or its person deleted; an empty one is refused", async () => {
    const unverified = address();
    await signIn(uuid(), { email: unverified, emailVerified: false });
    expect((await refusal(find(unverified))).code).toBe(Code.NotFound);
    expect((await refusal(find(address()))).code).toBe(Code.NotFound);
    expect((await refusal(find(`${"a".repeat(320)}@mail.example`))).code).toBe(Code.NotFound);
    expect((await refusal(find(""))).code).toBe(Code.InvalidArgument);

    const email = address();
    const { svcUserId } = await signIn(uuid(), { email, emailVerified: true });
    await account.client.deleteHuman({ svcUserId });
    expect((await refusal(find(email))).code).toBe(Code.NotFound);
  });
});
