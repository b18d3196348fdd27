#include "textflag.h"

// func asciiRun(p []byte) int
//
// The number of bytes at the start of p that are ASCII (below 0x80),
// counted 64 and then 16 bytes at a time with SSE2 (every amd64 has it):
// the index of the first byte that is not, or the length of p rounded
// down to 16 when the tail holds none. The caller checks the rest.
TEXT ·asciiRun(SB), NOSPLIT, $0-32
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	XORQ AX, AX

loop64:
	LEAQ 64(AX), DX
	CMPQ DX, CX
	JHI  loop16
	MOVOU (SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X1
	MOVOU 32(SI)(AX*1), X2
	MOVOU 48(SI)(AX*1), X3
	POR  X1, X0
	POR  X3, X2
	POR  X2, X0
	PMOVMSKB X0, DX
	TESTL DX, DX
	JNZ  loop16 // one of these 64 is not ASCII: find it 16 at a time
	ADDQ $64, AX
	JMP  loop64

loop16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JHI  done
	MOVOU (SI)(AX*1), X0
	PMOVMSKB X0, DX
	TESTL DX, DX
	JNZ  found
	ADDQ $16, AX
	JMP  loop16

found:
	BSFL DX, DX
	ADDQ DX, AX

done:
	MOVQ AX, ret+24(FP)
	RET
