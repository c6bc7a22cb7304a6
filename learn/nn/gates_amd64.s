//go:build !noasm

#include "textflag.h"

// Elementwise parts of the float32 GRU gates, eight lanes at a time, with
// the operations and roundings of the scalar loops in gruGatesBias32 (no
// fused multiply-adds), so results are identical. n is a multiple of 8.

// func gruPreRZ32(rz, gx, bx, gh, bh *float32, n int)
//
// gh[j] += bh[j]; rz[j] = (gx[j] + bx[j]) + gh[j].
TEXT ·gruPreRZ32(SB), NOSPLIT, $0-48
	MOVQ rz+0(FP), DI
	MOVQ gx+8(FP), SI
	MOVQ bx+16(FP), R8
	MOVQ gh+24(FP), DX
	MOVQ bh+32(FP), R9
	MOVQ n+40(FP), CX
	XORQ AX, AX
	TESTQ CX, CX
	JZ   rzdone

rzloop:
	VMOVUPS (DX)(AX*4), Y0
	VADDPS  (R9)(AX*4), Y0, Y0
	VMOVUPS Y0, (DX)(AX*4)
	VMOVUPS (SI)(AX*4), Y1
	VADDPS  (R8)(AX*4), Y1, Y1
	VADDPS  Y0, Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     rzloop

rzdone:
	VZEROUPPER
	RET

// func gruPreN32(cand, gx, bx, gh, bh, r *float32, n int)
//
// gh[j] += bh[j]; cand[j] = (gx[j] + bx[j]) + r[j]·gh[j].
TEXT ·gruPreN32(SB), NOSPLIT, $0-56
	MOVQ cand+0(FP), DI
	MOVQ gx+8(FP), SI
	MOVQ bx+16(FP), R8
	MOVQ gh+24(FP), DX
	MOVQ bh+32(FP), R9
	MOVQ r+40(FP), R10
	MOVQ n+48(FP), CX
	XORQ AX, AX
	TESTQ CX, CX
	JZ   ndone

nloop:
	VMOVUPS (DX)(AX*4), Y0
	VADDPS  (R9)(AX*4), Y0, Y0
	VMOVUPS Y0, (DX)(AX*4)
	VMULPS  (R10)(AX*4), Y0, Y0
	VMOVUPS (SI)(AX*4), Y1
	VADDPS  (R8)(AX*4), Y1, Y1
	VADDPS  Y0, Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     nloop

ndone:
	VZEROUPPER
	RET

// func gruMix32(hNext, z, cand, h *float32, n int)
//
// hNext[j] = (1 − z[j])·cand[j] + z[j]·h[j] (hNext may be h).
TEXT ·gruMix32(SB), NOSPLIT, $0-40
	MOVQ         hNext+0(FP), DI
	MOVQ         z+8(FP), SI
	MOVQ         cand+16(FP), DX
	MOVQ         h+24(FP), R8
	MOVQ         n+32(FP), CX
	MOVL         $0x3f800000, R9 // 1.0
	MOVL         R9, X7
	VBROADCASTSS X7, Y7
	XORQ         AX, AX
	TESTQ        CX, CX
	JZ           mdone

mloop:
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y0, Y7, Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMULPS  (R8)(AX*4), Y0, Y0
	VADDPS  Y0, Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     mloop

mdone:
	VZEROUPPER
	RET
