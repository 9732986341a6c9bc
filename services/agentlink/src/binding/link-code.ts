import { randomBytes } from "node:crypto";

/** No 0/O, 1/I/L (decisions.md): a person can read the code off one screen and type it on another. */
export const linkCodeAlphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
const linkCodeLength = 8;
export const linkCodeLifetimeMs = 10 * 60 * 1000;
export const linkCodeForm = /^[2-9A-HJKMNP-Z]{8}$/;

/** 31^8 (about 2^39.6) codes; rejection sampling keeps every character equally likely. */
export function generateLinkCode(): string {
  const limit = 256 - (256 % linkCodeAlphabet.length);
  let code = "";
  while (code.length < linkCodeLength)
    for (const byte of randomBytes(linkCodeLength * 2))
      if (byte < limit && code.length < linkCodeLength) code += linkCodeAlphabet[byte % linkCodeAlphabet.length];
  return code;
}
