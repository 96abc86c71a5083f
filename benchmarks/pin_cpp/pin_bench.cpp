// Pinocchio C++ timing: aba, rnea, crba on a model built by models.hpp (written by run.py). Median us per call.
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <chrono>
#include <cstring>
#include "models.hpp"
#include <cstdio>
#include <vector>
#include <algorithm>
int main(int argc, char **argv) {
  pinocchio::Model model;
  if (!std::strcmp(argv[1], "arm6")) build_arm6(model);
  else if (!std::strcmp(argv[1], "arm7")) build_arm7(model);
  else if (!std::strcmp(argv[1], "quadruped")) build_quadruped(model);
  else build_humanoid(model);

  pinocchio::Data data(model);
  const int N = 10000;
  std::vector<Eigen::VectorXd> q(N), v(N), tau(N);
  Eigen::VectorXd lo = Eigen::VectorXd::Constant(model.nq, -2.0), hi = Eigen::VectorXd::Constant(model.nq, 2.0);
  for (int i = 0; i < N; ++i) {
    q[i] = pinocchio::randomConfiguration(model, lo, hi);
    v[i] = Eigen::VectorXd::Random(model.nv); tau[i] = Eigen::VectorXd::Random(model.nv);
  }
  const char *names[3] = {"aba", "rnea", "crba"};
  for (int a = 0; a < 3; ++a) {
    std::vector<double> per;
    for (int r = 0; r < 7; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < N; ++i) {
        if (a == 0) pinocchio::aba(model, data, q[i], v[i], tau[i]);
        else if (a == 1) pinocchio::rnea(model, data, q[i], v[i], tau[i]);
        else pinocchio::crba(model, data, q[i]);
      }
      auto t1 = std::chrono::steady_clock::now();
      per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / N);
    }
    std::sort(per.begin(), per.end());
    std::printf("%s %.3f\n", names[a], per[3]);
  }
  return 0;
}
