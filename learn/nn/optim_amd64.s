//go:build !noasm

#include "textflag.h"

// func adamStep32x8(w, m, v, grad *float32, n int, c *[8]float32)
//
// Adam's update of n (a multiple of 8) float32 parameters, with
// c = [β1, 1−β1, β2, 1−β2, stepSize, 1/√bc2, ε, 0]. The operations and their
// order are those of the scalar loop in Adam.Step (no fused multiply-adds;
// VSQRTPS is the correctly rounded float32 square root, equal to rounding
// math.Sqrt of the widened value), so the results are identical.
TEXT ·adamStep32x8(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         m+8(FP), SI
	MOVQ         v+16(FP), DX
	MOVQ         grad+24(FP), BX
	MOVQ         n+32(FP), CX
	MOVQ         c+40(FP), AX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
	VBROADCASTSS 16(AX), Y12
	VBROADCASTSS 20(AX), Y13
	VBROADCASTSS 24(AX), Y14
	TESTQ        CX, CX
	JZ           done

loop:
	VMOVUPS (BX), Y0
	VMULPS  (SI), Y8, Y1 // β1·m
	VMULPS  Y0, Y9, Y2   // (1−β1)·g
	VADDPS  Y2, Y1, Y1
	VMOVUPS Y1, (SI)
	VMULPS  (DX), Y10, Y3 // β2·v
	VMULPS  Y0, Y11, Y4   // (1−β2)·g
	VMULPS  Y0, Y4, Y4    // ·g
	VADDPS  Y4, Y3, Y3
	VMOVUPS Y3, (DX)
	VSQRTPS Y3, Y5
	VMULPS  Y13, Y5, Y5 // √v/√bc2
	VADDPS  Y14, Y5, Y5 // + ε
	VMULPS  Y1, Y12, Y6 // stepSize·m
	VDIVPS  Y5, Y6, Y6
	VMOVUPS (DI), Y7
	VSUBPS  Y6, Y7, Y7
	VMOVUPS Y7, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	SUBQ    $8, CX
	JNZ     loop

done:
	VZEROUPPER
	RET
