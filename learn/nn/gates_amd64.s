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

// func gruBackRow32(dx, dg, dy, dp, hv, gt, gh *float32, m float32, h int)
//
// One sample's step of backGRUSeq for h (a multiple of 8) units: with
// d = dy[j] and dm = d·m (the gradient reaching the cell through the mask),
//
//	dan = dm·(1−z)·(1−n²), daz = dm·(hv−n)·z·(1−z), dar = dan·gh_n·r·(1−r)
//	dx[j, H+j, 2H+j] = dar, daz, dan;  dg[…] = dar, daz, dan·r
//	dp[j] = (d − dm) + dm·z
//
// with gates gt = [r|z|n] and gh_n = gh[2H+j], evaluated left to right
// without fused multiply-adds, as the scalar loops do.
TEXT ·gruBackRow32(SB), NOSPLIT, $0-72
	MOVQ         dx+0(FP), DI
	MOVQ         dg+8(FP), SI
	MOVQ         dy+16(FP), DX
	MOVQ         dp+24(FP), R8
	MOVQ         hv+32(FP), R9
	MOVQ         gt+40(FP), R10
	MOVQ         gh+48(FP), R11
	VBROADCASTSS m+56(FP), Y15
	MOVQ         h+64(FP), CX
	MOVL         $0x3f800000, AX
	MOVL         AX, X14
	VBROADCASTSS X14, Y14 // 1.0
	MOVQ         CX, R12
	SHLQ         $2, R12  // H in bytes
	XORQ         AX, AX
	TESTQ        CX, CX
	JZ           bdone

bloop:
	// R13 = address of element j in a 3H-wide row; BX = j in bytes.
	LEAQ    (AX*4), BX
	VMOVUPS (DX)(BX*1), Y0 // d
	VMULPS  Y15, Y0, Y1    // dm
	LEAQ    (R10)(BX*1), R13
	VMOVUPS (R13), Y2          // r
	VMOVUPS (R13)(R12*1), Y3   // z
	VMOVUPS (R13)(R12*2), Y4   // n
	VSUBPS  Y1, Y0, Y5         // d − dm
	VMULPS  Y3, Y1, Y6         // dm·z
	VADDPS  Y6, Y5, Y5
	VMOVUPS Y5, (R8)(BX*1)     // dp
	VSUBPS  Y3, Y14, Y6        // 1−z
	VMULPS  Y6, Y1, Y7         // dm·(1−z)
	VMULPS  Y4, Y4, Y8         // n²
	VSUBPS  Y8, Y14, Y8        // 1−n²
	VMULPS  Y8, Y7, Y7         // dan
	VMOVUPS (R9)(BX*1), Y8     // hv
	VSUBPS  Y4, Y8, Y8         // hv−n
	VMULPS  Y8, Y1, Y8         // dm·(hv−n)
	VMULPS  Y3, Y8, Y8         // ·z
	VMULPS  Y6, Y8, Y8         // ·(1−z) = daz
	LEAQ    (R11)(BX*1), R13
	VMOVUPS (R13)(R12*2), Y9   // gh_n
	VMULPS  Y9, Y7, Y9         // dan·gh_n
	VMULPS  Y2, Y9, Y9         // ·r
	VSUBPS  Y2, Y14, Y10       // 1−r
	VMULPS  Y10, Y9, Y9        // dar
	VMULPS  Y2, Y7, Y11        // dan·r
	LEAQ    (DI)(BX*1), R13
	VMOVUPS Y9, (R13)
	VMOVUPS Y8, (R13)(R12*1)
	VMOVUPS Y7, (R13)(R12*2)
	LEAQ    (SI)(BX*1), R13
	VMOVUPS Y9, (R13)
	VMOVUPS Y8, (R13)(R12*1)
	VMOVUPS Y11, (R13)(R12*2)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     bloop

bdone:
	VZEROUPPER
	RET

// func addTo32(dst, src *float32, n int)
//
// dst[j] += src[j] for j < n, n a multiple of 8.
TEXT ·addTo32(SB), NOSPLIT, $0-24
	MOVQ  dst+0(FP), DI
	MOVQ  src+8(FP), SI
	MOVQ  n+16(FP), CX
	XORQ  AX, AX
	TESTQ CX, CX
	JZ    adone

aloop:
	VMOVUPS (DI)(AX*4), Y0
	VADDPS  (SI)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     aloop

adone:
	VZEROUPPER
	RET
