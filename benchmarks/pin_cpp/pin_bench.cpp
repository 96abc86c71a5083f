// Pinocchio C++ timing: aba, rnea, crba, computeABADerivatives, computeRNEADerivatives, ccrba on a model built by models.hpp (written by run.py).
// Usage: pin_bench ROBOT [N=10000] [ROUNDS=7]; ROBOT is a robot spec known to models.hpp's build_model().
// Prints "<algorithm> <median> <min>" in microseconds per call over ROUNDS rounds of N random states
// (pinocchio::randomConfiguration in [-2, 2], v and tau uniform in [-1, 1]), after one warm-up pass.
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/centroidal.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "models.hpp"

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s ROBOT [N] [ROUNDS]\n", argv[0]);
    return 2;
  }
  pinocchio::Model model;
  if (!build_model(argv[1], model)) {
    std::fprintf(stderr, "pin_bench: no robot %s in models.hpp\n", argv[1]);
    return 2;
  }
  const int N = argc > 2 ? std::atoi(argv[2]) : 10000, rounds = argc > 3 ? std::atoi(argv[3]) : 7;
  if (N < 1 || rounds < 1) return 2;

  pinocchio::Data data(model);
  std::vector<Eigen::VectorXd> q(N), v(N), tau(N);
  Eigen::VectorXd lo = Eigen::VectorXd::Constant(model.nq, -2.0), hi = Eigen::VectorXd::Constant(model.nq, 2.0);
  for (int i = 0; i < N; ++i) {
    q[i] = pinocchio::randomConfiguration(model, lo, hi);
    v[i] = Eigen::VectorXd::Random(model.nv); tau[i] = Eigen::VectorXd::Random(model.nv);
  }
  const char *names[6] = {"aba", "rnea", "crba", "aba_derivatives", "rnea_derivatives", "ccrba"};
  auto pass = [&](int a) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < N; ++i) {
      if (a == 0) pinocchio::aba(model, data, q[i], v[i], tau[i]);
      else if (a == 1) pinocchio::rnea(model, data, q[i], v[i], tau[i]);
      else if (a == 2) pinocchio::crba(model, data, q[i]);
      else if (a == 3) pinocchio::computeABADerivatives(model, data, q[i], v[i], tau[i]);
      else if (a == 4) pinocchio::computeRNEADerivatives(model, data, q[i], v[i], tau[i]);
      else pinocchio::ccrba(model, data, q[i], v[i]);
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / N;
  };
  for (int a = 0; a < 6; ++a) {
    pass(a);  // warm-up
    std::vector<double> per;
    for (int r = 0; r < rounds; ++r) per.push_back(pass(a));
    std::sort(per.begin(), per.end());
    std::printf("%s %.6f %.6f\n", names[a], 0.5 * (per[(rounds - 1) / 2] + per[rounds / 2]), per[0]);
  }
  return 0;
}
