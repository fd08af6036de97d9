from sdpa_arms import UNKEYED, arm, left_out

impl = arm(left_out, UNKEYED)
