//go:build !noasm

#include "textflag.h"

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv0() (eax, edx uint32)
TEXT ·xgetbv0(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// func sgemmKernel6x16(k int, a *float32, rs, cs int, b, c *float32, ldc int, overwrite bool)
//
// C[i][j] += Σ_l a[i·rs + l·cs]·b[16l+j] for i < 6, j < 16 (C[i][j] = Σ…
// when overwrite is set, without reading C), with C's rows
// ldc elements apart: a is a packed panel (rs 1, cs 6) or op(A) read in
// place (rs lda, cs 1, or transposed rs 1, cs lda). Accumulators: Y0..Y11
// (row i in Y(2i), Y(2i+1)).
TEXT ·sgemmKernel6x16(SB), NOSPLIT, $0-57
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ rs+16(FP), R9
	MOVQ cs+24(FP), R11
	MOVQ b+32(FP), BX
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	MOVBLZX overwrite+56(FP), R12
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R11
	LEAQ (AX)(R9*2), R10
	ADDQ R9, R10 // row 3
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	TESTQ CX, CX
	JZ    store

loop:
	VMOVUPS      (BX), Y12
	VMOVUPS      32(BX), Y13
	VBROADCASTSS (AX), Y14
	VFMADD231PS  Y12, Y14, Y0
	VFMADD231PS  Y13, Y14, Y1
	VBROADCASTSS (AX)(R9*1), Y15
	VFMADD231PS  Y12, Y15, Y2
	VFMADD231PS  Y13, Y15, Y3
	VBROADCASTSS (AX)(R9*2), Y14
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VBROADCASTSS (R10), Y15
	VFMADD231PS  Y12, Y15, Y6
	VFMADD231PS  Y13, Y15, Y7
	VBROADCASTSS (R10)(R9*1), Y14
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VBROADCASTSS (R10)(R9*2), Y15
	VFMADD231PS  Y12, Y15, Y10
	VFMADD231PS  Y13, Y15, Y11
	ADDQ         R11, AX
	ADDQ         R11, R10
	ADDQ         $64, BX
	DECQ         CX
	JNZ          loop

store:
	TESTQ   R12, R12
	JNZ     overwrite
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DX)
	VADDPS  32(DX), Y1, Y1
	VMOVUPS Y1, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y2, Y2
	VMOVUPS Y2, (DX)
	VADDPS  32(DX), Y3, Y3
	VMOVUPS Y3, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y4, Y4
	VMOVUPS Y4, (DX)
	VADDPS  32(DX), Y5, Y5
	VMOVUPS Y5, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y6, Y6
	VMOVUPS Y6, (DX)
	VADDPS  32(DX), Y7, Y7
	VMOVUPS Y7, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y8, Y8
	VMOVUPS Y8, (DX)
	VADDPS  32(DX), Y9, Y9
	VMOVUPS Y9, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y10, Y10
	VMOVUPS Y10, (DX)
	VADDPS  32(DX), Y11, Y11
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

overwrite:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET
