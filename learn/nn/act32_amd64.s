//go:build !noasm

#include "textflag.h"

// Vectorised float32 activations (AVX2, FMA), four values per step in float64:
// the same method as expNonPos, sigmoid32 and tanh32 in act32.go, except that
// e^r uses the degree-11 Taylor polynomial over |r| <= ln2/2 (remainder below
// (ln2/2)^12/12! = 6e-15) instead of a table. Constants are stored four times
// so that they can be FMA memory operands.

DATA actone<>+0(SB)/8, $0x3ff0000000000000
DATA actone<>+8(SB)/8, $0x3ff0000000000000
DATA actone<>+16(SB)/8, $0x3ff0000000000000
DATA actone<>+24(SB)/8, $0x3ff0000000000000
GLOBL actone<>(SB), RODATA|NOPTR, $32
DATA actsignbit<>+0(SB)/8, $0x8000000000000000
DATA actsignbit<>+8(SB)/8, $0x8000000000000000
DATA actsignbit<>+16(SB)/8, $0x8000000000000000
DATA actsignbit<>+24(SB)/8, $0x8000000000000000
GLOBL actsignbit<>(SB), RODATA|NOPTR, $32
DATA actabsmask<>+0(SB)/8, $0x7fffffffffffffff
DATA actabsmask<>+8(SB)/8, $0x7fffffffffffffff
DATA actabsmask<>+16(SB)/8, $0x7fffffffffffffff
DATA actabsmask<>+24(SB)/8, $0x7fffffffffffffff
GLOBL actabsmask<>(SB), RODATA|NOPTR, $32
DATA actlog2e<>+0(SB)/8, $0x3ff71547652b82fe
DATA actlog2e<>+8(SB)/8, $0x3ff71547652b82fe
DATA actlog2e<>+16(SB)/8, $0x3ff71547652b82fe
DATA actlog2e<>+24(SB)/8, $0x3ff71547652b82fe
GLOBL actlog2e<>(SB), RODATA|NOPTR, $32
DATA actln2hi<>+0(SB)/8, $0x3fe62e42fee00000
DATA actln2hi<>+8(SB)/8, $0x3fe62e42fee00000
DATA actln2hi<>+16(SB)/8, $0x3fe62e42fee00000
DATA actln2hi<>+24(SB)/8, $0x3fe62e42fee00000
GLOBL actln2hi<>(SB), RODATA|NOPTR, $32
DATA actln2lo<>+0(SB)/8, $0x3dea39ef35793c76
DATA actln2lo<>+8(SB)/8, $0x3dea39ef35793c76
DATA actln2lo<>+16(SB)/8, $0x3dea39ef35793c76
DATA actln2lo<>+24(SB)/8, $0x3dea39ef35793c76
GLOBL actln2lo<>(SB), RODATA|NOPTR, $32
DATA actexpmin<>+0(SB)/8, $0xc086200000000000
DATA actexpmin<>+8(SB)/8, $0xc086200000000000
DATA actexpmin<>+16(SB)/8, $0xc086200000000000
DATA actexpmin<>+24(SB)/8, $0xc086200000000000
GLOBL actexpmin<>(SB), RODATA|NOPTR, $32
DATA acttanhlo<>+0(SB)/8, $0x3fa999999999999a
DATA acttanhlo<>+8(SB)/8, $0x3fa999999999999a
DATA acttanhlo<>+16(SB)/8, $0x3fa999999999999a
DATA acttanhlo<>+24(SB)/8, $0x3fa999999999999a
GLOBL acttanhlo<>(SB), RODATA|NOPTR, $32
DATA actt1<>+0(SB)/8, $0xbfd5555555555555
DATA actt1<>+8(SB)/8, $0xbfd5555555555555
DATA actt1<>+16(SB)/8, $0xbfd5555555555555
DATA actt1<>+24(SB)/8, $0xbfd5555555555555
GLOBL actt1<>(SB), RODATA|NOPTR, $32
DATA actt2<>+0(SB)/8, $0x3fc1111111111111
DATA actt2<>+8(SB)/8, $0x3fc1111111111111
DATA actt2<>+16(SB)/8, $0x3fc1111111111111
DATA actt2<>+24(SB)/8, $0x3fc1111111111111
GLOBL actt2<>(SB), RODATA|NOPTR, $32
DATA actt3<>+0(SB)/8, $0xbfaba1ba1ba1ba1c
DATA actt3<>+8(SB)/8, $0xbfaba1ba1ba1ba1c
DATA actt3<>+16(SB)/8, $0xbfaba1ba1ba1ba1c
DATA actt3<>+24(SB)/8, $0xbfaba1ba1ba1ba1c
GLOBL actt3<>(SB), RODATA|NOPTR, $32
DATA actc0<>+0(SB)/8, $0x3ff0000000000000
DATA actc0<>+8(SB)/8, $0x3ff0000000000000
DATA actc0<>+16(SB)/8, $0x3ff0000000000000
DATA actc0<>+24(SB)/8, $0x3ff0000000000000
GLOBL actc0<>(SB), RODATA|NOPTR, $32
DATA actc1<>+0(SB)/8, $0x3ff0000000000000
DATA actc1<>+8(SB)/8, $0x3ff0000000000000
DATA actc1<>+16(SB)/8, $0x3ff0000000000000
DATA actc1<>+24(SB)/8, $0x3ff0000000000000
GLOBL actc1<>(SB), RODATA|NOPTR, $32
DATA actc2<>+0(SB)/8, $0x3fe0000000000000
DATA actc2<>+8(SB)/8, $0x3fe0000000000000
DATA actc2<>+16(SB)/8, $0x3fe0000000000000
DATA actc2<>+24(SB)/8, $0x3fe0000000000000
GLOBL actc2<>(SB), RODATA|NOPTR, $32
DATA actc3<>+0(SB)/8, $0x3fc5555555555555
DATA actc3<>+8(SB)/8, $0x3fc5555555555555
DATA actc3<>+16(SB)/8, $0x3fc5555555555555
DATA actc3<>+24(SB)/8, $0x3fc5555555555555
GLOBL actc3<>(SB), RODATA|NOPTR, $32
DATA actc4<>+0(SB)/8, $0x3fa5555555555555
DATA actc4<>+8(SB)/8, $0x3fa5555555555555
DATA actc4<>+16(SB)/8, $0x3fa5555555555555
DATA actc4<>+24(SB)/8, $0x3fa5555555555555
GLOBL actc4<>(SB), RODATA|NOPTR, $32
DATA actc5<>+0(SB)/8, $0x3f81111111111111
DATA actc5<>+8(SB)/8, $0x3f81111111111111
DATA actc5<>+16(SB)/8, $0x3f81111111111111
DATA actc5<>+24(SB)/8, $0x3f81111111111111
GLOBL actc5<>(SB), RODATA|NOPTR, $32
DATA actc6<>+0(SB)/8, $0x3f56c16c16c16c17
DATA actc6<>+8(SB)/8, $0x3f56c16c16c16c17
DATA actc6<>+16(SB)/8, $0x3f56c16c16c16c17
DATA actc6<>+24(SB)/8, $0x3f56c16c16c16c17
GLOBL actc6<>(SB), RODATA|NOPTR, $32
DATA actc7<>+0(SB)/8, $0x3f2a01a01a01a01a
DATA actc7<>+8(SB)/8, $0x3f2a01a01a01a01a
DATA actc7<>+16(SB)/8, $0x3f2a01a01a01a01a
DATA actc7<>+24(SB)/8, $0x3f2a01a01a01a01a
GLOBL actc7<>(SB), RODATA|NOPTR, $32
DATA actc8<>+0(SB)/8, $0x3efa01a01a01a01a
DATA actc8<>+8(SB)/8, $0x3efa01a01a01a01a
DATA actc8<>+16(SB)/8, $0x3efa01a01a01a01a
DATA actc8<>+24(SB)/8, $0x3efa01a01a01a01a
GLOBL actc8<>(SB), RODATA|NOPTR, $32
DATA actc9<>+0(SB)/8, $0x3ec71de3a556c734
DATA actc9<>+8(SB)/8, $0x3ec71de3a556c734
DATA actc9<>+16(SB)/8, $0x3ec71de3a556c734
DATA actc9<>+24(SB)/8, $0x3ec71de3a556c734
GLOBL actc9<>(SB), RODATA|NOPTR, $32
DATA actc10<>+0(SB)/8, $0x3e927e4fb7789f5c
DATA actc10<>+8(SB)/8, $0x3e927e4fb7789f5c
DATA actc10<>+16(SB)/8, $0x3e927e4fb7789f5c
DATA actc10<>+24(SB)/8, $0x3e927e4fb7789f5c
GLOBL actc10<>(SB), RODATA|NOPTR, $32
DATA actc11<>+0(SB)/8, $0x3e5ae64567f544e4
DATA actc11<>+8(SB)/8, $0x3e5ae64567f544e4
DATA actc11<>+16(SB)/8, $0x3e5ae64567f544e4
DATA actc11<>+24(SB)/8, $0x3e5ae64567f544e4
GLOBL actc11<>(SB), RODATA|NOPTR, $32
DATA actbias<>+0(SB)/8, $0x00000000000003ff
DATA actbias<>+8(SB)/8, $0x00000000000003ff
DATA actbias<>+16(SB)/8, $0x00000000000003ff
DATA actbias<>+24(SB)/8, $0x00000000000003ff
GLOBL actbias<>(SB), RODATA|NOPTR, $32

// func sigmoid32x4(dst, src *float32, n int)
//
// dst[i] = 1/(1+e^-src[i]) for i < n, n a multiple of 4: with e = e^-|x|,
// s = 1/(1+e), the result is s for x >= 0 and e*s otherwise.
TEXT ·sigmoid32x4(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VMOVUPD actone<>(SB), Y15
	VMOVUPD actabsmask<>(SB), Y14
	VMOVUPD actlog2e<>(SB), Y13
	VMOVUPD actln2hi<>(SB), Y12
	VMOVUPD actln2lo<>(SB), Y11
	VMOVUPD actexpmin<>(SB), Y10
	VMOVUPD actbias<>(SB), Y9
	VMOVUPD actsignbit<>(SB), Y8
	TESTQ   CX, CX
	JZ      done
sloop:
	VCVTPS2PD    (SI), Y0
	VANDPD       Y14, Y0, Y1
	VXORPD       Y8, Y1, Y1 // -|x|
	VMAXPD       Y1, Y10, Y1 // clamp at -708; NaN stays
	VMULPD       Y13, Y1, Y2
	VROUNDPD     $0, Y2, Y2 // k = nearest integer to y/ln2
	VMOVAPD      Y1, Y3
	VFNMADD231PD Y12, Y2, Y3 // r = y - k*ln2hi
	VFNMADD231PD Y11, Y2, Y3 // r -= k*ln2lo
	VMOVUPD      actc11<>(SB), Y4
	VFMADD213PD  actc10<>(SB), Y3, Y4
	VFMADD213PD  actc9<>(SB), Y3, Y4
	VFMADD213PD  actc8<>(SB), Y3, Y4
	VFMADD213PD  actc7<>(SB), Y3, Y4
	VFMADD213PD  actc6<>(SB), Y3, Y4
	VFMADD213PD  actc5<>(SB), Y3, Y4
	VFMADD213PD  actc4<>(SB), Y3, Y4
	VFMADD213PD  actc3<>(SB), Y3, Y4
	VFMADD213PD  actc2<>(SB), Y3, Y4
	VFMADD213PD  actc1<>(SB), Y3, Y4
	VFMADD213PD  actc0<>(SB), Y3, Y4
	VCVTPD2DQY   Y2, X2
	VPMOVSXDQ    X2, Y2
	VPADDQ       Y9, Y2, Y2
	VPSLLQ       $52, Y2, Y2 // 2^k
	VMULPD       Y2, Y4, Y1
	VADDPD       Y15, Y1, Y2
	VDIVPD       Y2, Y15, Y2 // s = 1/(1+e)
	VBLENDVPD    Y0, Y1, Y15, Y3 // x < 0 (sign bit) ? e : 1
	VMULPD       Y3, Y2, Y2
	VCVTPD2PSY   Y2, X2
	VMOVUPS      X2, (DI)
	ADDQ         $16, SI
	ADDQ         $16, DI
	SUBQ         $4, CX
	JNZ          sloop
done:
	VZEROUPPER
	RET

// func tanh32x4(dst, src *float32, n int)
//
// dst[i] = tanh(src[i]) for i < n, n a multiple of 4: (1-e)/(1+e) with
// e = e^-2|x| and the sign of x, or x(1 - x²/3 + 2x⁴/15 - 17x⁶/315) for
// |x| < 0.05.
TEXT ·tanh32x4(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VMOVUPD actone<>(SB), Y15
	VMOVUPD actabsmask<>(SB), Y14
	VMOVUPD actlog2e<>(SB), Y13
	VMOVUPD actln2hi<>(SB), Y12
	VMOVUPD actln2lo<>(SB), Y11
	VMOVUPD actexpmin<>(SB), Y10
	VMOVUPD actbias<>(SB), Y9
	VMOVUPD actsignbit<>(SB), Y8
	TESTQ   CX, CX
	JZ      tdone
tloop:
	VCVTPS2PD    (SI), Y0
	VANDPD       Y14, Y0, Y5 // a = |x|
	VADDPD       Y5, Y5, Y1
	VXORPD       Y8, Y1, Y1 // -2a
	VMAXPD       Y1, Y10, Y1 // clamp at -708; NaN stays
	VMULPD       Y13, Y1, Y2
	VROUNDPD     $0, Y2, Y2 // k = nearest integer to y/ln2
	VMOVAPD      Y1, Y3
	VFNMADD231PD Y12, Y2, Y3 // r = y - k*ln2hi
	VFNMADD231PD Y11, Y2, Y3 // r -= k*ln2lo
	VMOVUPD      actc11<>(SB), Y4
	VFMADD213PD  actc10<>(SB), Y3, Y4
	VFMADD213PD  actc9<>(SB), Y3, Y4
	VFMADD213PD  actc8<>(SB), Y3, Y4
	VFMADD213PD  actc7<>(SB), Y3, Y4
	VFMADD213PD  actc6<>(SB), Y3, Y4
	VFMADD213PD  actc5<>(SB), Y3, Y4
	VFMADD213PD  actc4<>(SB), Y3, Y4
	VFMADD213PD  actc3<>(SB), Y3, Y4
	VFMADD213PD  actc2<>(SB), Y3, Y4
	VFMADD213PD  actc1<>(SB), Y3, Y4
	VFMADD213PD  actc0<>(SB), Y3, Y4
	VCVTPD2DQY   Y2, X2
	VPMOVSXDQ    X2, Y2
	VPADDQ       Y9, Y2, Y2
	VPSLLQ       $52, Y2, Y2 // 2^k
	VMULPD       Y2, Y4, Y1
	VSUBPD       Y1, Y15, Y2 // 1-e
	VADDPD       Y15, Y1, Y3 // 1+e
	VDIVPD       Y3, Y2, Y2
	VANDPD       Y8, Y0, Y4
	VORPD        Y4, Y2, Y2 // with the sign of x
	VMULPD       Y0, Y0, Y6 // x²
	VMOVUPD      actt3<>(SB), Y7
	VFMADD213PD  actt2<>(SB), Y6, Y7
	VFMADD213PD  actt1<>(SB), Y6, Y7
	VFMADD213PD  Y15, Y6, Y7
	VMULPD       Y0, Y7, Y7
	VCMPPD       $1, acttanhlo<>(SB), Y5, Y4 // a < 0.05
	VBLENDVPD    Y4, Y7, Y2, Y2
	VCVTPD2PSY   Y2, X2
	VMOVUPS      X2, (DI)
	ADDQ         $16, SI
	ADDQ         $16, DI
	SUBQ         $4, CX
	JNZ          tloop
tdone:
	VZEROUPPER
	RET
