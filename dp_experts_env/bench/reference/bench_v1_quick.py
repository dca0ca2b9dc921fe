"""The bench-v1 quick reference set (written by ``dp-experts bench --all``)."""

DATA = r"""
{
 "schema": "dp-experts-bench-reference/1",
 "card_schema": "dp-experts-bench/1",
 "key": {
  "protocol": "bench-v1",
  "digest": "16b1ec4a703f1e108032ec9ad970df84ceca949c6c806166b7f3462a69ff887f",
  "quick": true,
  "code_version": "66921defd73ab381"
 },
 "scales": {
  "shift": [
   534.75,
   81.25
  ],
  "switching": [
   1799.75,
   88.5
  ],
  "anti-lazy": [
   784.25,
   -902.5
  ],
  "ftl-trap": [
   795.75,
   33.75
  ],
  "stochastic": [
   177.25,
   9.75
  ],
  "punish-frequent": [
   118.0,
   35.75
  ],
  "bandit": [
   145.0,
   81.75
  ],
  "bandit-advice": [
   597.5,
   142.5
  ],
  "digits": [
   75.75,
   -14.25
  ],
  "oco-stochastic": [
   1244.493062871126,
   38.75533118639612
  ],
  "oco-anti-ftl": [
   0.5,
   0.6581138830084189
  ]
 },
 "entries": [
  {
   "label": "uniform",
   "name": "uniform",
   "feedback": "any",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 1.734723475976807e-18,
    "static-worst-case": -2.168404344971009e-19,
    "stationary": 0.0,
    "adaptive": 2.7755575615628914e-17,
    "bandit": -2.7755575615628914e-17,
    "bandit-advice": -1.734723475976807e-18,
    "continuous": null,
    "real-data": 0.0
   },
   "overall": -4.336808689942018e-20,
   "learner_code": "c6e05e333fc4916a"
  },
  {
   "label": "exp3",
   "name": "exp3",
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.849802371541502,
    "bandit-advice": 0.013736263736263738,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.4317693176388828,
   "learner_code": "b0aab4183de45176"
  },
  {
   "label": "exp4",
   "name": "exp4",
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.6679841897233202,
    "bandit-advice": 1.0,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.8339920948616601,
   "learner_code": "b0aab4183de45176"
  },
  {
   "label": "ftpl-gr",
   "name": "ftpl-gr",
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.3517786561264822,
    "bandit-advice": 0.014835164835164831,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.1833069104808235,
   "learner_code": "b0aab4183de45176"
  },
  {
   "label": "kl-ucb",
   "name": "kl-ucb",
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 1.158102766798419,
    "bandit-advice": 0.04835164835164835,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.6032272075750337,
   "learner_code": "82a9b32fdf005144"
  },
  {
   "label": "thompson",
   "name": "thompson",
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 1.6482213438735178,
    "bandit-advice": 0.014835164835164836,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.8315282543543413,
   "learner_code": "82a9b32fdf005144"
  },
  {
   "label": "tsallis-inf",
   "name": "tsallis-inf",
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 1.0,
    "bandit-advice": 0.01043956043956044,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.5052197802197802,
   "learner_code": "b0aab4183de45176"
  },
  {
   "label": "ucb1",
   "name": "ucb1",
   "feedback": "bandit",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.632411067193676,
    "bandit-advice": 0.015384615384615385,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.32389784128914567,
   "learner_code": "82a9b32fdf005144"
  },
  {
   "label": "fixed-share",
   "name": "fixed-share",
   "feedback": "full",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 1.0,
    "static-worst-case": 0.9880249343832022,
    "stationary": 0.8761194029850746,
    "adaptive": 1.0,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 1.0
   },
   "overall": 0.9960083114610674,
   "learner_code": "b2a7022a690ceced"
  },
  {
   "label": "follow-the-leader",
   "name": "follow-the-leader",
   "feedback": "full",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 0.3098573468429543,
    "static-worst-case": 0.09621234401057804,
    "stationary": 1.0,
    "adaptive": 0.48936170212765956,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.7388888888888889
   },
   "overall": 0.5127026459531676,
   "learner_code": "b2a7022a690ceced"
  },
  {
   "label": "hedge",
   "name": "hedge",
   "feedback": "full",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 0.28808625067750787,
    "static-worst-case": 0.7241737068326664,
    "stationary": 0.8880597014925373,
    "adaptive": 0.9726443768996962,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.625
   },
   "overall": 0.7457444694417346,
   "learner_code": "b2a7022a690ceced"
  },
  {
   "label": "shrinking-dartboard",
   "name": "shrinking-dartboard",
   "feedback": "full",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": 0.28392262759496584,
    "static-worst-case": 0.7066600174589115,
    "stationary": 0.908955223880597,
    "adaptive": -0.243161094224924,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.6944444444444444
   },
   "overall": 0.5616756964994406,
   "learner_code": "b2a7022a690ceced"
  },
  {
   "label": "ftrl-oco",
   "name": "ftrl-oco",
   "feedback": "oco",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.9999999999999998,
    "real-data": null
   },
   "overall": 0.9999999999999998,
   "learner_code": "34fc91f44f32ce8e"
  },
  {
   "label": "lazy-ftrl-oco",
   "name": "lazy-ftrl-oco",
   "feedback": "oco",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.8949204329790579,
    "real-data": null
   },
   "overall": 0.8949204329790579,
   "learner_code": "779d74de87d41949"
  },
  {
   "label": "ogd",
   "name": "ogd",
   "feedback": "oco",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.9831710648404943,
    "real-data": null
   },
   "overall": 0.9831710648404943,
   "learner_code": "34fc91f44f32ce8e"
  },
  {
   "label": "p-comw-lazy",
   "name": "p-comw-lazy",
   "feedback": "oco",
   "private": false,
   "headline_epsilon": "inf",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.41884215048324785,
    "real-data": null
   },
   "overall": 0.41884215048324785,
   "learner_code": "a934f86c9e6e5dd0"
  },
  {
   "label": "adap-ucb",
   "name": "adap-ucb",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.019762845849802396,
    "bandit-advice": 0.009890109890109891,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.014826477869956143,
   "learner_code": "75d3745bfe6d5200"
  },
  {
   "label": "dp-klucb",
   "name": "dp-klucb",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.2648221343873518,
    "bandit-advice": 0.026373626373626374,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.1455978803804891,
   "learner_code": "a90dbeb52081c6d3"
  },
  {
   "label": "dp-klucb:paper",
   "name": "dp-klucb:paper",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": -0.12252964426877472,
    "bandit-advice": -0.009890109890109893,
    "continuous": null,
    "real-data": null
   },
   "overall": -0.0662098770794423,
   "learner_code": "0cd7362443dfbf76"
  },
  {
   "label": "dp-se",
   "name": "dp-se",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": -0.12648221343873517,
    "bandit-advice": 0.013736263736263736,
    "continuous": null,
    "real-data": null
   },
   "overall": -0.05637297485123571,
   "learner_code": "1933dd7cdfc66381"
  },
  {
   "label": "ldp-exp4",
   "name": "ldp-exp4",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.37944664031620556,
    "bandit-advice": 0.27912087912087913,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.32928375971854235,
   "learner_code": "b2684094cde5e251"
  },
  {
   "label": "private-bandit-over-experts",
   "name": "private-bandit-over-experts",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.466403162055336,
    "bandit-advice": 0.29395604395604397,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.38017960300569,
   "learner_code": "9219da3143e9f172"
  },
  {
   "label": "private-batched-bandit",
   "name": "private-batched-bandit",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.39920948616600793,
    "bandit-advice": 0.016483516483516484,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.2078465013247622,
   "learner_code": "9219da3143e9f172"
  },
  {
   "label": "private-batched-exp4",
   "name": "private-batched-exp4",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": -0.09881422924901183,
    "bandit-advice": 0.4527472527472527,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.17696651174912043,
   "learner_code": "b2684094cde5e251"
  },
  {
   "label": "private-batched-exp4:paper",
   "name": "private-batched-exp4:paper",
   "feedback": "bandit",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": 0.11857707509881424,
    "bandit-advice": 0.15274725274725276,
    "continuous": null,
    "real-data": null
   },
   "overall": 0.13566216392303349,
   "learner_code": "0cd7362443dfbf76"
  },
  {
   "label": "batched-private-shrinking-dartboard",
   "name": "batched-private-shrinking-dartboard",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.1287942655250978,
    "static-worst-case": 0.5887712269903568,
    "stationary": 0.04776119402985074,
    "adaptive": -4.753799392097264,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.45
   },
   "overall": 0.2088518198516495,
   "learner_code": "593b5d77a271b601"
  },
  {
   "label": "dp-ftrl-tree",
   "name": "dp-ftrl-tree",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.032760575766922796,
    "static-worst-case": 0.4101263218181542,
    "stationary": 0.08358208955223881,
    "adaptive": -2.1094224924012157,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.4527777777777778
   },
   "overall": 0.17548966237910527,
   "learner_code": "f7b484db64f02dfc"
  },
  {
   "label": "gaussian-tree-hedge",
   "name": "gaussian-tree-hedge",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.14840716189236705,
    "static-worst-case": 0.622158112850389,
    "stationary": 0.32089552238805974,
    "adaptive": -1.4802431610942248,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.3194444444444444
   },
   "overall": 0.2629157095749571,
   "learner_code": "0dfb3301a3421970"
  },
  {
   "label": "limited-updates",
   "name": "limited-updates",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.13309081303360035,
    "static-worst-case": 0.4580683059487507,
    "stationary": 0.9492537313432836,
    "adaptive": -9.03951367781155,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.5083333333333333
   },
   "overall": 0.36649748410522814,
   "learner_code": "cd191694ddcec33b"
  },
  {
   "label": "meta-expert-reduction",
   "name": "meta-expert-reduction",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.07846624299438745,
    "static-worst-case": 0.1263988427635963,
    "stationary": 0.061194029850746276,
    "adaptive": -2.738601823708207,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.21111111111111114
   },
   "overall": 0.08868637186957667,
   "learner_code": "cc4f2c9a09c6869a"
  },
  {
   "label": "noisy-clipped-hedge",
   "name": "noisy-clipped-hedge",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.1286025096582622,
    "static-worst-case": 0.17619795149550282,
    "stationary": -0.04029850746268656,
    "adaptive": -5.045592705167174,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.24166666666666667
   },
   "overall": 0.08816731789702614,
   "learner_code": "d1730b4f3ae3229c"
  },
  {
   "label": "private-fixed-share",
   "name": "private-fixed-share",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.39173706171381906,
    "static-worst-case": 0.7233761082499193,
    "stationary": 0.2,
    "adaptive": -0.6261398176291794,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.5555555555555556
   },
   "overall": 0.3824308724231249,
   "learner_code": "5b1dd2830fa000be"
  },
  {
   "label": "private-lazy-hedge",
   "name": "private-lazy-hedge",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.017871751485685157,
    "static-worst-case": 0.30209657193806755,
    "stationary": 0.18507462686567164,
    "adaptive": -5.167173252279635,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": -0.03888888888888886
   },
   "overall": 0.054685829820822644,
   "learner_code": "37f3ad209d89940c"
  },
  {
   "label": "private-shrinking-dartboard",
   "name": "private-shrinking-dartboard",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.08292941918347921,
    "static-worst-case": 0.43594791035735914,
    "stationary": -0.010447761194029855,
    "adaptive": -6.009118541033434,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.14444444444444443
   },
   "overall": 0.07230870081129794,
   "learner_code": "593b5d77a271b601"
  },
  {
   "label": "randomized-prefix-softmax",
   "name": "randomized-prefix-softmax",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.131775984691745,
    "static-worst-case": 0.4475617042978564,
    "stationary": 0.8791044776119402,
    "adaptive": -9.267477203647417,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.4444444444444444
   },
   "overall": 0.3412607111446819,
   "learner_code": "21facab1f3d5bc03"
  },
  {
   "label": "randomized-prefix-softmax:paper",
   "name": "randomized-prefix-softmax:paper",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.07583537827287641,
    "static-worst-case": 0.43601545277049353,
    "stationary": 0.4388059701492537,
    "adaptive": -9.227963525835866,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.20555555555555555
   },
   "overall": 0.23913546219964185,
   "learner_code": "60fe910d9d16fe18"
  },
  {
   "label": "svt-restart",
   "name": "svt-restart",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.3511234751542866,
    "static-worst-case": 0.7371006755408354,
    "stationary": 0.8104477611940298,
    "adaptive": -6.914893617021277,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.4833333333333334
   },
   "overall": 0.5238524946761518,
   "learner_code": "5f8e4301e8d9cc2c"
  },
  {
   "label": "svt-restart:paper",
   "name": "svt-restart:paper",
   "feedback": "full",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": 0.12072835820414711,
    "static-worst-case": 0.4463393033240787,
    "stationary": 0.8029850746268656,
    "adaptive": -9.085106382978724,
    "bandit": null,
    "bandit-advice": null,
    "continuous": null,
    "real-data": 0.4027777777777778
   },
   "overall": 0.32328181310200116,
   "learner_code": "60fe910d9d16fe18"
  },
  {
   "label": "dp-ftrl-oco",
   "name": "dp-ftrl-oco",
   "feedback": "oco",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.5355879410075237,
    "real-data": null
   },
   "overall": 0.5355879410075237,
   "learner_code": "34fc91f44f32ce8e"
  },
  {
   "label": "gaussian-dp-ftrl-oco",
   "name": "gaussian-dp-ftrl-oco",
   "feedback": "oco",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.8094829180221823,
    "real-data": null
   },
   "overall": 0.8094829180221823,
   "learner_code": "779d74de87d41949"
  },
  {
   "label": "p-comw",
   "name": "p-comw",
   "feedback": "oco",
   "private": true,
   "headline_epsilon": "1",
   "capabilities": {
    "tracking": null,
    "static-worst-case": null,
    "stationary": null,
    "adaptive": null,
    "bandit": null,
    "bandit-advice": null,
    "continuous": 0.24677171137136938,
    "real-data": null
   },
   "overall": 0.24677171137136938,
   "learner_code": "a934f86c9e6e5dd0"
  }
 ]
}
"""
