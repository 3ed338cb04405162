//===- MathCoefficients.h - constants of the float32 math cores --*- C++ -*-===//
//
// The constants of the cores that compute float32 math within 1 ulp: the
// compiler's (lib/Transforms/ApproximateMath.cpp and WideMath.cpp, as MLIR)
// and the eager kernels' (runtime/kernels/eager/exponential.h,
// error_function.h and wide_math.h, as C++ the host compiler vectorizes)
// evaluate the same polynomials, so compiled and eager results agree. Plain
// constexpr data: no MLIR, includable by kernel sources.
//
// The polynomials are least-squares fits at Chebyshev nodes, in the power
// basis, highest degree first; the comment of each gives its variable,
// interval and error. Those of the float64 cores were fitted against mpmath
// (50 digits): a float32 result is within 1 ulp of the correctly rounded one
// whenever the float64 value is within 2^-24 (6e-8) of the exact one, and
// those fits aim at 4e-9, no tighter, since every extra degree is a float64
// fma per lane. The float32 erf's have their own script (below).
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_TRANSFORMS_MATHCOEFFICIENTS_H
#define MAIA_TRANSFORMS_MATHCOEFFICIENTS_H

namespace maia_math {

constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.6931471805599453;
constexpr double kLn2Lo = 2.3190468138462996e-17; // ln(2) - kLn2
constexpr double kLog2E = 1.4426950408889634;

// float32 exp: ln(2) in two parts, the high one with 16 significant bits
// (n times it is exact for the |n| <= 150 of float32), and exp(r)'s Taylor
// series from r^7 down to r^2 (1/7! ... 1/2!), r in [-ln(2)/2, ln(2)/2]:
// truncation below 4e-9. Each rounds to the same float from double.
constexpr double kLn2HiF32 = 0.693145751953125;
constexpr double kLn2LoF32 = 1.428606765330187045e-06; // ln(2) - kLn2HiF32
constexpr double kExpTaylorF32[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120,
                                    1.0 / 24,   1.0 / 6,   0.5};

// expm1(r) / r, r in [-ln(2)/2, ln(2)/2]: 2.4e-10.
constexpr double kExpm1OverR[] = {
    0.00019832928385454088, 0.0013941281149797786, 0.008333418743045955,
    0.041666351210595184, 0.1666666617455452, 0.5000000047350687,
    1.00000000003643};
// (log((1 + s) / (1 - s)) - 2s) / s^3 in z = s^2, |s| <= 3 - 2 sqrt(2):
// 1.7e-9 (of a term below 1% of log(m)).
constexpr double kLogSeries[] = {0.23333988417202564, 0.285506939843277,
                                 0.4000012292276851, 0.6666666655324553};
// (atan(t) - t) / t^3 in z = t^2, t in [0, tan(pi/8)]: 1.7e-9.
constexpr double kAtanSeries[] = {
    0.050446808351926435, -0.08623235542718066, 0.11071154894282069,
    -0.14284138672037558, 0.19999976996945648,  -0.3333333327837495};
// (asin(s) - s) / s^3 in z = s^2, s in [0, 1/2]: 1.3e-9.
constexpr double kAsinSeries[] = {
    0.0309821963902814,  0.010569413899743411, 0.023613014667569786,
    0.030269010705556255, 0.04464766978442075, 0.07499992395232308,
    0.1666666668610534};
// (sin(r) - r) / r^3 and (cos(r) - 1 + r^2/2) / r^4 in z = r^2,
// |r| <= pi/4: 1.7e-10 and 5.7e-11.
constexpr double kSinSeries[] = {2.7248875917538144e-06,
                                 -0.00019840077766325286,
                                 0.008333331855679162, -0.1666666666379587};
constexpr double kCosSeries[] = {-2.730024369462373e-07, 2.48005943842999e-05,
                                 -0.0013888887659604069,
                                 0.041666666664283605};
// erf(a) / a in z = a^2, a in [0, 1]: 1.3e-9 (float64 erfc below 1).
constexpr double kErfSeries[] = {
    7.846925794162331e-05, -0.0008008096436425167, 0.005188089236691542,
    -0.026853686505542092, 0.11283582149865953,    -0.37612625559795604,
    1.128379165688376};
// float32 erf (float32 arithmetic, every coefficient a float32 value): a +
// a q(a^2) below 1, q fitted to erf(a)/a - 1 in z = a^2 (1e-8 absolute, one
// fma rounds the sum); 1 - erfc(a) in [1, 4], erfc fitted in t = a - 2.5
// (8e-10 absolute; evaluating erfc, not erf, keeps Horner's roundings
// those of values <= 0.16). tools/conformance/fit_float32_erf.py fits them
// (the float32 rounding of each coefficient refitted into the lower ones)
// and checks the algorithm on every float32.
constexpr double kErfF32Small[] = {
    7.882497448008507e-05, -0.0008018855005502701, 0.005189312156289816,
    -0.02685432881116867,  0.11283597350120544,    -0.3761262595653534,
    0.12837916612625122};
constexpr double kErfcF32Center = 2.5;
constexpr double kErfcF32[] = {
    -8.90137130227231e-07,   -4.985672035218158e-07, 1.571926986798644e-05,
    -1.7760237824404612e-05, -8.110046474030241e-05, 0.00027061818400397897,
    -0.00025873014237731695, -0.0005603600875474513, 0.002797554712742567,
    -0.006109109614044428,   0.008622604422271252,   -0.008351770229637623,
    0.005445688497275114,    -0.002178183989599347,  0.0004069523129146546};
// erfc(a) exp(a^2) in v = a - 3/2, a in [1, 2]: 2e-9.
constexpr double kErfcMiddle[] = {
    0.0002332328777857037, -0.0007042919049249426, 0.001885311237804566,
    -0.005137940493235404, 0.013377251142951362,   -0.032931462276746065,
    0.07615104981362031,   -0.16362290736031215,   0.3215854163515695};
// erfc(a) a exp(a^2) in w = 1/a^2 - kErfcTailCenter, a in [2, 12]: 1.1e-9.
constexpr double kErfcTailCenter = 0.1285;
constexpr double kErfcTail[] = {
    -95.42979130698295,  29.873723634747545, -6.711632924454486,
    2.6543977418339373,  -1.172920863702363, 0.5497221110197811,
    -0.30057657994942627, 0.20615532880620654, -0.2069845671839108,
    0.5333402535250515};

} // namespace maia_math

#endif // MAIA_TRANSFORMS_MATHCOEFFICIENTS_H
