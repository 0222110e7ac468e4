/*
 * crc32c.h — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of segment blocks and footers.
 *
 * crc32c_update() (seg.h includes this header for its users) picks the SSE4.2
 * crc32 instruction when the CPU has it and a table-driven loop otherwise;
 * both give the same result. Chaining: crc = crc32c_update(crc, part, n) over
 * consecutive parts equals one call over the whole; start with 0.
 * Check value: crc32c_update(0, "123456789", 9) == 0xE3069283.
 */
#ifndef D9_COL_CRC32C_H
#define D9_COL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len);

/* The portable implementation (exposed so tests compare both paths). */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* 1 when crc32c_update uses the hardware instruction on this CPU. */
int crc32c_has_hw(void);

#endif /* D9_COL_CRC32C_H */
