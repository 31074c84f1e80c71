// Whether this browser runs WebAssembly SIMD (simd128), which the page's wasm is built with
// (scripts/dev/build-web.sh): asked of WebAssembly.validate with the smallest module that uses it.
const PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type section: one type, () -> v128
  0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
  0x0a, 0x0a, 0x01, 0x08, 0x00, // code section: one body of 8 bytes, no locals
  0x41, 0x00, // i32.const 0
  0xfd, 0x0f, // i8x16.splat
  0xfd, 0x62, // i8x16.popcnt
  0x0b, // end
]);

export function hasSimd() {
  return WebAssembly.validate(PROBE);
}

// What to add to a failed load's message: why it failed, when the cause is a missing SIMD.
export function simdNote() {
  return hasSimd()
    ? ''
    : ' (this browser does not run WebAssembly SIMD, which the page needs: Chromium 91+, Firefox 89+, Safari 16.4+)';
}
