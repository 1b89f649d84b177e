/* Test-only shim for scripts/cross-check.sh: Wine 8 (Debian bookworm) has no
 * bcryptprimitives.dll, and Rust's std on Windows imports ProcessPrng from it (real Windows 10+
 * has it). Put next to corvid.exe in the Wine test folder only; never shipped.
 * ProcessPrng fills the buffer with random bytes and always succeeds; here it forwards to
 * advapi32's RtlGenRandom (SystemFunction036), which Wine implements. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, chunk)) return FALSE;
    data += chunk;
    length -= chunk;
  }
  return TRUE;
}
