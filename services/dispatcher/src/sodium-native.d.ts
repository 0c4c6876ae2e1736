// sodium-native ships no types, and @types/sodium-native describes an older major; only what
// sodium-signer.ts uses. Each function throws when libsodium answers an error.
declare module 'sodium-native' {
  const sodium: {
    readonly crypto_sign_BYTES: number;
    readonly crypto_sign_PUBLICKEYBYTES: number;
    readonly crypto_sign_SECRETKEYBYTES: number;
    crypto_sign_seed_keypair(publicKey: Buffer, secretKey: Buffer, seed: Buffer): void;
    crypto_sign_detached(signature: Buffer, message: Buffer, secretKey: Buffer): void;
  };
  export default sodium;
}
