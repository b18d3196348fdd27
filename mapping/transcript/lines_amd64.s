#include "textflag.h"

// BLOCK(off) reads the block at AX+off: its \n escapes into X8 (-1 a
// byte), its \u escapes and \n escapes after a backslash into X9.
#define BLOCK(off) \
	MOVOU off-1(SI)(AX*1), X0 \
	MOVOU off(SI)(AX*1), X1   \
	MOVOU off+1(SI)(AX*1), X2 \
	PCMPEQB X10, X0           \
	PCMPEQB X10, X1           \
	MOVOU X2, X3              \
	PCMPEQB X11, X2           \
	PCMPEQB X12, X3           \
	PAND X1, X2               \
	PAND X1, X3               \
	PAND X2, X0               \
	POR  X3, X9               \
	POR  X0, X9               \
	PADDB X2, X8

// func newlineEscapes(p []byte) (n, o int)
//
// Counts the \n escapes whose backslash is in a 16-byte block of p at
// offset 1, 17, 33 ... (p[o-1] and p[o+16] are read around the block at
// o), with SSE2 (every amd64 has it), four blocks a step while none of
// them stops and then one: n escapes up to block o, the first that holds
// a \u or a \n whose backslash comes after a backslash (which the caller
// checks), or the first that does not fit.
TEXT ·newlineEscapes(SB), NOSPLIT, $0-40
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	MOVQ $1, AX
	MOVQ $0x5c5c5c5c5c5c5c5c, DX // '\\'
	MOVQ DX, X10
	PUNPCKLQDQ X10, X10
	MOVQ $0x6e6e6e6e6e6e6e6e, DX // 'n'
	MOVQ DX, X11
	PUNPCKLQDQ X11, X11
	MOVQ $0x7575757575757575, DX // 'u'
	MOVQ DX, X12
	PUNPCKLQDQ X12, X12
	MOVQ $0x0101010101010101, DX
	MOVQ DX, X13
	PUNPCKLQDQ X13, X13
	PXOR X7, X7   // zero
	PXOR X14, X14 // zero
	PXOR X15, X15 // count, one per quadword

	// 64 bytes a step while no block of them stops: the \n masks of
	// the four blocks summed bytewise (at most 4 a byte), added up once.
loop64:
	LEAQ 65(AX), DX
	CMPQ DX, CX
	JHI  loop
	PXOR X9, X9 // hard blocks
	PXOR X8, X8 // -\n per byte
	BLOCK(0)
	BLOCK(16)
	BLOCK(32)
	BLOCK(48)
	PMOVMSKB X9, DX
	TESTL DX, DX
	JNZ  loop // one of these blocks stops: find it 16 at a time
	PSUBB  X8, X14 // X14 was zero: now the count per byte
	PSADBW X7, X14
	PADDQ  X14, X15
	PXOR   X14, X14
	ADDQ $64, AX
	JMP  loop64

loop:
	LEAQ 17(AX), DX
	CMPQ DX, CX
	JHI  done
	MOVOU -1(SI)(AX*1), X0
	MOVOU (SI)(AX*1), X1
	MOVOU 1(SI)(AX*1), X2
	PCMPEQB X10, X0 // backslash before
	PCMPEQB X10, X1 // backslash
	MOVOU X2, X3
	PCMPEQB X11, X2
	PCMPEQB X12, X3
	PAND X1, X2 // \n
	PAND X1, X3 // \u
	PAND X2, X0 // \n after a backslash
	POR  X3, X0
	PMOVMSKB X0, DX
	TESTL DX, DX
	JNZ  done
	PAND   X13, X2
	PSADBW X7, X2
	PADDQ  X2, X15
	ADDQ $16, AX
	JMP  loop

done:
	PSHUFD $0x4e, X15, X0
	PADDQ  X0, X15
	MOVQ   X15, n+24(FP)
	MOVQ   AX, o+32(FP)
	RET
