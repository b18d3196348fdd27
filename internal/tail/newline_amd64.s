#include "textflag.h"

// func newlineASCII(p []byte) (nl, ascii int)
//
// The index of the first '\n' in p (-1 when there is none) and a lower
// bound of how many bytes at the start of p, before that '\n' (of all of
// p without one), are ASCII: the first byte at or above 0x80 when it is
// in the 16 bytes of the '\n', else the start of the first 64- or 16-byte
// block that holds one, or the '\n' itself when none comes before it.
// With SSE2 (every amd64 has it): 64 bytes a step, four loads compared
// with '\n' and OR-ed together for their top bits, until a step holds a
// '\n'; then 16 at a time, then a byte at a time for a tail under 16.
TEXT ·newlineASCII(SB), NOSPLIT, $0-40
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	XORQ AX, AX  // the block being read
	MOVQ $-1, DI // the start of the first block with a non-ASCII byte; -1 before one
	MOVQ $0x0a0a0a0a0a0a0a0a, DX
	MOVQ DX, X8
	PUNPCKLQDQ X8, X8 // '\n' in every byte

loop64:
	LEAQ 64(AX), DX
	CMPQ DX, CX
	JHI  loop16
	MOVOU (SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X1
	MOVOU 32(SI)(AX*1), X2
	MOVOU 48(SI)(AX*1), X3
	MOVOU X0, X4
	MOVOU X1, X5
	MOVOU X2, X6
	MOVOU X3, X7
	PCMPEQB X8, X4
	PCMPEQB X8, X5
	PCMPEQB X8, X6
	PCMPEQB X8, X7
	POR  X5, X4
	POR  X7, X6
	POR  X6, X4
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ  loop16 // a '\n' in these 64: find it 16 at a time
	TESTQ DI, DI
	JNS  next64 // a non-ASCII byte was met already
	POR  X1, X0
	POR  X3, X2
	POR  X2, X0
	PMOVMSKB X0, DX
	TESTL DX, DX
	JZ   next64
	MOVQ AX, DI

next64:
	ADDQ $64, AX
	JMP  loop64

loop16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JHI  tail
	MOVOU (SI)(AX*1), X0
	MOVOU X0, X4
	PCMPEQB X8, X4
	PMOVMSKB X4, DX // the '\n's
	PMOVMSKB X0, BX // the non-ASCII bytes
	TESTL DX, DX
	JNZ  found16
	TESTQ DI, DI
	JNS  next16
	TESTL BX, BX
	JZ   next16
	MOVQ AX, DI

next16:
	ADDQ $16, AX
	JMP  loop16

found16:
	BSFL DX, DX // the '\n' is byte k = DX of the block
	TESTQ DI, DI
	JNS  at
	MOVQ CX, R9
	MOVL DX, CX
	MOVL $1, R8
	SHLL CX, R8
	DECL R8     // the bytes before the '\n'
	MOVQ R9, CX
	ANDL R8, BX
	JZ   asciiat
	BSFL BX, BX
	LEAQ (AX)(BX*1), DI // the first non-ASCII byte before the '\n'

at:
	ADDQ AX, DX
	JMP  done

asciiat:
	ADDQ AX, DX
	JMP  ascii

tail:
	CMPQ AX, CX
	JAE  none
	MOVBLZX (SI)(AX*1), DX
	CMPB DL, $0x0a
	JEQ  tailfound
	CMPB DL, $0x80
	JB   tailnext
	TESTQ DI, DI
	JNS  tailnext
	MOVQ AX, DI

tailnext:
	INCQ AX
	JMP  tail

tailfound:
	MOVQ AX, DX
	TESTQ DI, DI
	JNS  done

ascii:
	MOVQ DX, DI // every byte before the '\n' is ASCII
	JMP  done

none:
	MOVQ $-1, DX
	TESTQ DI, DI
	JNS  done
	MOVQ CX, DI // every byte of p is ASCII

done:
	MOVQ DX, nl+24(FP)
	MOVQ DI, ascii+32(FP)
	RET
